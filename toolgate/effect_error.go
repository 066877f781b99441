package toolgate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/blackboardkernel/bk/canon"
)

// Recordable marks an effect's error whose text may be stored: the gate
// then records its message (each real value of the call's masked
// arguments in it replaced by its masked form, and cut to a bounded
// length) as the failure's error text, in the failure record and its
// decision record. The text of any other error is never stored: the gate
// records its kind (the innermost error's type, and the typed failure's
// status when it has one) and logs the message through the kernel's
// logger (kernel.Config.Logger), for the operator. An effect's error text
// often quotes what it was given or what an upstream answered: an account
// number, a token, the masked values themselves. It returns nil for a nil
// err; the result wraps err, so [errors.Is], [errors.As], [Retryable] and
// the failure types still see through it.
func Recordable(err error) error {
	if err == nil {
		return nil
	}
	return recordableError{err}
}

type recordableError struct{ err error }

func (e recordableError) Error() string { return e.err.Error() }
func (e recordableError) Unwrap() error { return e.err }

// maxErrorText bounds the error text of an effect a record keeps.
const maxErrorText = 1024

// errorText is what the store keeps of an effect's error err: its text
// when it is [Recordable], masked; otherwise its kind only, and its text
// goes to the operator's log.
func (x *executor) errorText(ctx context.Context, j *job, err error) string {
	if !effectErrorRecordable() {
		return err.Error()
	}
	if errors.As(err, new(recordableError)) {
		return clipText(x.maskText(ctx, j, err.Error()), maxErrorText)
	}
	x.log.WarnContext(ctx, "toolgate: effect error", "tool", j.e.Name, "action", j.act.ID,
		"trace", j.trace, "error", err.Error())
	return errorKind(err)
}

// errorKind words an error without its text: the type of the innermost
// error of its chain, e.g. "an error of type *net.OpError".
func errorKind(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	return "an error of type " + typeName(err)
}

// typeName is the name of v's dynamic type, as %T writes it.
func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return reflect.TypeOf(v).String()
}

// maskText replaces in s each real value of the job's masked arguments
// (a string as it is, any other value as its canonical JSON) by its masked
// form. When a value cannot be masked, s is left out entirely and its
// kind is all that remains: fail closed.
func (x *executor) maskText(ctx context.Context, j *job, s string) string {
	g := x.g
	if !masksStored() || len(j.e.Masked) == 0 {
		return s
	}
	for _, f := range j.e.Masked {
		v, ok := j.real[f]
		if !ok {
			continue
		}
		form, isString := v.(string)
		if !isString {
			b, err := canon.Encode(v)
			if err != nil {
				return "an error whose text holds a masked value"
			}
			form = string(b)
		}
		if form == "" || !strings.Contains(s, form) {
			continue
		}
		h, err := g.mask.value(ctx, j.trace, v)
		if err != nil {
			return "an error whose text holds a masked value"
		}
		s = strings.ReplaceAll(s, form, h)
	}
	return s
}

// clipText cuts s to at most n bytes at a rune boundary, marking the cut.
func clipText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// errPanicked is an effect's recovered panic: the value (for the
// operator's log only) and the goroutine's stack where it was recovered.
type errPanicked struct {
	value any
	stack []byte
}

func (e *errPanicked) Error() string {
	return fmt.Sprintf("the effect panicked (a value of type %s)", typeName(e.value))
}

// logPanic tells the operator, through the kernel's logger, that the
// effect of attempt n panicked: the value and the stack.
func (x *executor) logPanic(ctx context.Context, j *job, n int, p *errPanicked) {
	x.log.ErrorContext(ctx, "toolgate: effect panicked; its outcome is unknown (EFFECT_UNKNOWN)",
		"tool", j.e.Name, "action", j.act.ID, "trace", j.trace, "attempt", n,
		"panic", fmt.Sprint(p.value), "stack", string(p.stack))
}
