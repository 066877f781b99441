package failure

import "time"

// Names the package's external tests use, kept unexported in the package.
var CategoryOf = categoryOf

const ClassInfrastructure = classInfrastructure
const CodeSyntax = codeSyntax

var FromHTTPStatus = fromHTTPStatus

const MaxMessage = maxMessage

var StatusForHTTP = statusForHTTP
var Categories = allCategories
var Statuses = allStatuses

// The taxonomy, for the tests.
const (
	AuthError       = authError
	EndpointUnknown = endpointUnknown
	NotFound        = notFound
	RateLimit       = rateLimit
	Network         = network
	ProviderDown    = providerDown
	FormatError     = formatError
	Duplicate       = duplicate
	Unknown         = unknown
	ClassSkill      = classSkill
)

var Yield = yield

// Class is the class type, for the tests.
type Class = class

var ClassOf = classOf

// Loop names who acts on a remedy, for the tests.
type Loop = string

// Routing is one row of the routing table, for the tests.
type Routing struct {
	Loop                string
	Route               Route
	Retryable           bool
	Backoff, MaxBackoff time.Duration
	Jitter              bool
	Otherwise           Route
}

// RoutingFor returns the routing table's row for c.
func RoutingFor(c Category) (Routing, bool) {
	r, ok := rules[c]
	return Routing{Loop: r.loop, Route: r.route, Retryable: r.retryable, Backoff: r.backoff, MaxBackoff: r.maxBackoff,
		Jitter: r.route == RouteRetryJitter, Otherwise: r.otherwise}, ok
}

// Valid reports whether c is a member of the taxonomy.
func (c Category) Valid() bool {
	_, ok := classes[c]
	return ok
}

const StatusSucceeded = statusSucceeded

// EvaluateStatus is Evaluate with the status it decided: SUCCEEDED for nil.
func EvaluateStatus(result map[string]any, want Expect) (ExecStatus, error) {
	err := Evaluate(result, want)
	if err == nil {
		return statusSucceeded, nil
	}
	return Classify(err).Status(), err
}

// GrantOpen is the end of a grant still running.
const GrantOpen = GrantEnd("")

// Used is the number of turns taken.
func (l *Grant) Used() int { return len(l.Trajectory()) }

// IsZero reports whether f is the zero Failure.
func (f Failure) IsZero() bool { return f.isZero() }
