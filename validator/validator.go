package validator

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/jsonval"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// Codes the validators in this package emit.
const ()

// For scopes v to proposals of one slot and kind; an empty kind matches every
// kind of the slot. Other proposals pass.
func For(slot blackboard.Slot, kind string, v kernel.Validator) kernel.Validator {
	return kernel.ValidatorFunc(func(ctx context.Context, c kernel.Candidate) kernel.Cause {
		if c.Proposal().Slot != slot || (kind != "" && c.Proposal().Kind != kind) {
			return kernel.Cause{}
		}
		return v.Validate(ctx, c)
	})
}

// Max rejects a proposal whose numeric payload field is above limit with
// code (reason.OverLimit when code is empty). A field that is present but not a
// number is rejected too: a limit that can be dodged by sending a string is
// no limit. An absent field passes; combine with [Require] to demand it.
func Max(field string, limit float64, code reason.Code) kernel.Validator {
	if code == "" {
		code = reason.OverLimit
	}
	return kernel.ValidatorFunc(func(_ context.Context, c kernel.Candidate) kernel.Cause {
		v, present := c.Proposal().Payload[field]
		if !present {
			return kernel.Cause{}
		}
		f, ok := jsonval.Float(v)
		if !ok {
			return kernel.Cause{Code: code, Rule: "max:" + field, Detail: fmt.Sprintf("%s is not a number", field)}
		}
		if f > limit {
			return kernel.Cause{Code: code, Rule: "max:" + field, Detail: fmt.Sprintf("%s = %v exceeds %v", field, f, limit)}
		}
		return kernel.Cause{}
	})
}

// Require rejects a proposal whose payload lacks any of fields (or holds
// null there) with reason.MissingField.
func Require(fields ...string) kernel.Validator {
	return kernel.ValidatorFunc(func(_ context.Context, c kernel.Candidate) kernel.Cause {
		p := c.Proposal().Payload
		for _, f := range fields {
			if v, ok := p[f]; !ok || v == nil {
				return kernel.Cause{Code: reason.MissingField, Rule: "require:" + f, Detail: fmt.Sprintf("field %q is missing", f)}
			}
		}
		return kernel.Cause{}
	})
}

// All runs vs in order and returns the first rejection.
func All(vs ...kernel.Validator) kernel.Validator {
	return kernel.ValidatorFunc(func(ctx context.Context, c kernel.Candidate) kernel.Cause {
		for _, v := range vs {
			if vd := v.Validate(ctx, c); vd.Code != "" && !vd.Code.OK() {
				return vd
			}
		}
		return kernel.Cause{}
	})
}
