package expr

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"

	"github.com/blackboardkernel/bk/blackboard"
)

// CostLimit bounds one evaluation of one expression, in cel-go's cost
// units.
const CostLimit = 100_000

// InterruptEvery is how many comprehension iterations run between checks
// of the context, so that cancelling it stops a long loop early.
const InterruptEvery = 100

// The bounds on what an expression is given: [CheckCost] estimates the
// worst case over inputs within them, [CheckValue] checks an input.
const (
	// MaxElements bounds the entries of every list and object.
	MaxElements = 1000
	// MaxStringBytes bounds every string (and object key), in bytes.
	MaxStringBytes = 16 << 10
	// MaxDepth bounds the nesting of lists and objects.
	MaxDepth = 32
	// MaxValues bounds the values of one input, counted over every level.
	MaxValues = 10_000
)

// Object is the CEL type of a JSON object: string keys, values of any JSON
// type. Declaring payloads so lets the checker type a field selection as
// dyn and leaves a missing key to fail at evaluation.
var Object = cel.MapType(cel.StringType, cel.DynType)

// NewEnv returns an environment declaring vars, with the options every
// environment of the module shares: numbers compare across types (JSON
// numbers are doubles; authors write int literals) and macro calls are
// kept, so that a part of an expression can be printed back.
func NewEnv(vars ...cel.EnvOption) (*cel.Env, error) {
	opts := append([]cel.EnvOption{
		cel.CrossTypeNumericComparisons(true),
		cel.EnableMacroCallTracking(),
	}, vars...)
	return cel.NewEnv(opts...)
}

// ErrCompile is wrapped by the error [Compile] returns for an expression
// that does not parse or type-check.
var ErrCompile = errors.New("does not compile")

// Compile parses and checks src in env. An empty or ill-formed expression
// is an error wrapping [ErrCompile].
func Compile(env *cel.Env, src string) (*cel.Ast, error) {
	if src == "" {
		return nil, fmt.Errorf("%w: empty expression", ErrCompile)
	}
	ast, iss := env.Compile(src)
	if err := iss.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCompile, err)
	}
	return ast, nil
}

// WantBool returns an error unless ast is of type bool or dyn (a dyn
// value is checked at evaluation, where a non-bool fails closed).
func WantBool(ast *cel.Ast) error {
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return fmt.Errorf("has type %s, want bool", t)
	}
	return nil
}

// CostError is the error [CheckCost] returns for an expression whose
// worst-case cost exceeds [CostLimit].
type CostError struct {
	Max uint64 // the estimated worst case
}

// Error says by how much the expression is over the limit.
func (e *CostError) Error() string {
	return fmt.Sprintf("may cost up to %d, over the limit of %d, for inputs of up to %d elements (a loop within a loop over a list, say)",
		e.Max, CostLimit, MaxElements)
}

// CheckCost estimates the worst-case cost of evaluating ast over inputs
// within the bounds and returns a [*CostError] when it exceeds
// [CostLimit], or an error when it cannot be estimated.
func CheckCost(env *cel.Env, ast *cel.Ast) error {
	est, err := env.EstimateCost(ast, sizeBound{})
	if err != nil {
		return fmt.Errorf("its cost cannot be estimated: %v", err)
	}
	if est.Max > CostLimit {
		return &CostError{Max: est.Max}
	}
	return nil
}

// Program returns ast's program for inputs checked against the bounds
// before evaluation: it runs untracked (cel-go's runtime cost tracker
// searches a stack that grows in a loop, so a tracked evaluation costs time
// quadratic in the list it walks) and checks its context every
// [InterruptEvery] iterations.
func Program(env *cel.Env, ast *cel.Ast) (cel.Program, error) {
	return env.Program(ast, cel.InterruptCheckFrequency(InterruptEvery))
}

// TrackedProgram returns ast's program for inputs not checked against the
// bounds: its cost is tracked at run time and an evaluation over
// [CostLimit] fails. It checks its context as [Program]'s does.
func TrackedProgram(env *cel.Env, ast *cel.Ast) (cel.Program, error) {
	return env.Program(ast, cel.InterruptCheckFrequency(InterruptEvery), cel.CostLimit(CostLimit))
}

// sizeBound is the cost estimator [CheckCost] uses: every list, object and
// string an expression reads is as large as the bounds allow. A value of
// type dyn (any payload field) is taken for a list of [MaxElements]: a dyn
// string may be longer, so the cost of a string function over a field can
// exceed the estimate, by at most MaxStringBytes/MaxElements.
type sizeBound struct{}

// EstimateSize implements [checker.CostEstimator].
func (sizeBound) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	max := uint64(MaxElements)
	if t := n.Type(); t != nil && (t.IsExactType(cel.StringType) || t.IsExactType(cel.BytesType)) {
		max = MaxStringBytes
	}
	return &checker.SizeEstimate{Min: 0, Max: max}
}

// EstimateCallCost implements [checker.CostEstimator]: the standard
// functions' own estimates apply.
func (sizeBound) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// CheckValue returns what in v (a JSON value: nil, bool, numbers, string,
// map[string]any, []any) is out of bounds, as a path of keys and indexes
// and why, or "".
func CheckValue(v any) string {
	values := 0
	return checkValue(v, 0, &values)
}

// checkValue walks v, counting its values into *values; on the first
// value out of bounds it returns where (a path of keys and indexes) and
// why.
func checkValue(v any, depth int, values *int) string {
	*values++
	if *values > MaxValues {
		return fmt.Sprintf("more than %d values", MaxValues)
	}
	if depth > MaxDepth {
		return fmt.Sprintf("lists or objects nested deeper than %d", MaxDepth)
	}
	switch x := v.(type) {
	case nil, bool, float64, int, int64:
		return ""
	case string:
		if len(x) > MaxStringBytes {
			return fmt.Sprintf("a string of %d bytes", len(x))
		}
		return ""
	case blackboard.Payload:
		return checkValue(map[string]any(x), depth, values)
	case map[string]any:
		if len(x) > MaxElements {
			return fmt.Sprintf("an object of %d entries", len(x))
		}
		for k, e := range x {
			if len(k) > MaxStringBytes {
				return fmt.Sprintf("a key of %d bytes", len(k))
			}
			if p := checkValue(e, depth+1, values); p != "" {
				return "." + k + ": " + p
			}
		}
		return ""
	case []any:
		if len(x) > MaxElements {
			return fmt.Sprintf("a list of %d elements", len(x))
		}
		for i, e := range x {
			if p := checkValue(e, depth+1, values); p != "" {
				return "[" + strconv.Itoa(i) + "]: " + p
			}
		}
		return ""
	}
	// Other Go types a payload may hold ([]string, typed maps): their
	// lengths and elements are bounded alike.
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Len() > MaxElements {
			return fmt.Sprintf("a list of %d elements", rv.Len())
		}
		for i := range rv.Len() {
			if p := checkValue(rv.Index(i).Interface(), depth+1, values); p != "" {
				return "[" + strconv.Itoa(i) + "]: " + p
			}
		}
	case reflect.Map:
		if rv.Len() > MaxElements {
			return fmt.Sprintf("an object of %d entries", rv.Len())
		}
		for it := rv.MapRange(); it.Next(); {
			if p := checkValue(it.Value().Interface(), depth+1, values); p != "" {
				return "." + fmt.Sprint(it.Key().Interface()) + ": " + p
			}
		}
	case reflect.String:
		if rv.Len() > MaxStringBytes {
			return fmt.Sprintf("a string of %d bytes", rv.Len())
		}
	}
	return ""
}
