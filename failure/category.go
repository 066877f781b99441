package failure

// Category is the kind of an execution failure: one of the eleven members of
// the taxonomy below. The category, not the message, decides what happens
// next ([RemedyFor], [Grant.Turn]). It is never chosen directly: the status
// table gives each [ExecStatus] its category ([Failure.Category]), so
// callers produce and match statuses, and read a category as the string it
// is (auth_error, endpoint_unknown, not_found, rate_limit, network,
// provider_down, code_syntax, function_mismatch, format_error, duplicate,
// unknown).
type Category string

// The taxonomy. It is closed: code that meets a category outside it treats
// it as unknown.
const (
	authError        = Category("auth_error")        // credentials missing, expired or refused
	endpointUnknown  = Category("endpoint_unknown")  // the spec is wrong: no such operation, wrong method, an unsupported variant
	notFound         = Category("not_found")         // the operation exists, the resource it names does not
	rateLimit        = Category("rate_limit")        // the provider asks the caller to slow down
	network          = Category("network")           // no answer: refused, reset, DNS, timeout
	providerDown     = Category("provider_down")     // the provider answered that it is failing
	codeSyntax       = Category("code_syntax")       // generated code does not parse
	functionMismatch = Category("function_mismatch") // generated code calls something wrongly: arity, names, types
	formatError      = Category("format_error")      // data of the wrong shape: a bad request body, unreadable or incomplete output
	duplicate        = Category("duplicate")         // the effect has already happened
	unknown          = Category("unknown")           // none of the above; a human decides
)

// categories lists the taxonomy in a fixed order.
var categories = [...]Category{
	authError, endpointUnknown, notFound, rateLimit, network, providerDown,
	codeSyntax, functionMismatch, formatError, duplicate, unknown,
}

// allCategories returns the taxonomy, in a fixed order, as a new slice.
func allCategories() []Category { return append([]Category(nil), categories[:]...) }

// class groups categories by who can repair them. It decides the grant
// ([Grant.Turn]): only skill failures let a worker keep its grant.
type class string

// Classes of failure.
const (
	// classSkill: the worker made a mistake it can correct with the error in
	// hand and the knowledge it already has.
	classSkill = class("skill")
	// ClassSpec: the worker's knowledge of the target is wrong or incomplete; a
	// research step has to come first.
	classSpec = class("spec")
	// ClassState: the world is not as the task assumed (credentials, an effect
	// already applied); no amount of code fixes it.
	classState = class("state")
	// ClassInfrastructure: the path to the provider, or the provider, is failing.
	classInfrastructure = class("infrastructure")
	// ClassUnknown: the failure could not be typed.
	classUnknown = class("unknown")
)

// classes is the one Category → Class table.
var classes = map[Category]class{
	authError:        classState,
	duplicate:        classState,
	endpointUnknown:  classSpec,
	notFound:         classSpec,
	rateLimit:        classInfrastructure,
	network:          classInfrastructure,
	providerDown:     classInfrastructure,
	codeSyntax:       classSkill,
	functionMismatch: classSkill,
	formatError:      classSkill,
	unknown:          classUnknown,
}

// classOf returns the category's class; classUnknown for a category
// outside the taxonomy.
func classOf(c Category) class {
	if k, ok := classes[c]; ok {
		return k
	}
	return classUnknown
}

// ExecStatus is a typed execution status: what the layer that ran an effect
// knew when it failed, stated as a constant rather than as prose. Statuses
// are finer than categories (a 401 and a 403 are both auth_error); each
// maps to exactly one category through one table (categoryOf).
type ExecStatus string

// Execution statuses.
const (
	statusSucceeded = ExecStatus("SUCCEEDED") // the effect ran and its result passed evaluation; a result may say so

	// Partial success ([Evaluate]).
	StatusIncompleteFetch    = ExecStatus("FAILED_INCOMPLETE_FETCH")     // some resources came back, others failed
	StatusSilentPartialFetch = ExecStatus("FAILED_SILENT_PARTIAL_FETCH") // no error, and no data where data was expected
	StatusSchemaIncomplete   = ExecStatus("FAILED_SCHEMA_INCOMPLETE")    // data came back without fields the caller requires

	// Credentials.
	StatusAuthExpired = ExecStatus("FAILED_AUTH_EXPIRED") // missing, expired or rejected credentials (HTTP 401, 407)
	StatusAuthDenied  = ExecStatus("FAILED_AUTH_DENIED")  // valid credentials without the permission (HTTP 403)

	// The target.
	StatusEndpointUnknown = ExecStatus("FAILED_ENDPOINT_UNKNOWN") // the operation is not offered (HTTP 405, 501)
	StatusNotFound        = ExecStatus("FAILED_NOT_FOUND")        // the named resource does not exist (HTTP 404, 410)
	StatusDuplicate       = ExecStatus("FAILED_DUPLICATE")        // the effect exists already (HTTP 409, a used once-key)

	// The way there.
	StatusRateLimited  = ExecStatus("FAILED_RATE_LIMITED")  // HTTP 429, or a quota the provider reports
	StatusNetwork      = ExecStatus("FAILED_NETWORK")       // connection refused or reset, DNS, a dropped connection
	StatusTimeout      = ExecStatus("FAILED_TIMEOUT")       // no answer in time (a deadline, HTTP 408, 504)
	StatusProviderDown = ExecStatus("FAILED_PROVIDER_DOWN") // the provider reports its own failure (HTTP 500, 503, other 5xx)

	// The worker's own output.
	StatusSyntax           = ExecStatus("FAILED_SYNTAX")            // code that does not parse
	StatusFunctionMismatch = ExecStatus("FAILED_FUNCTION_MISMATCH") // code that calls a function or field wrongly
	StatusFormat           = ExecStatus("FAILED_FORMAT")            // a malformed request or unreadable data (HTTP 400, 413, 415, 422)

	StatusUnknown = ExecStatus("FAILED_UNKNOWN") // a failure nobody typed
)

// signals is the one Status → Category table. A new integration that can
// tell a new kind of failure apart adds a row here and nowhere else.
var signals = map[ExecStatus]Category{
	StatusIncompleteFetch:    endpointUnknown,
	StatusSilentPartialFetch: endpointUnknown,
	// The fields are missing from what the worker handed back; the worker
	// is told which, and retries in the fast loop. If the source truly
	// lacks them, the fast loop's attempts run out.
	StatusSchemaIncomplete: formatError,
	StatusAuthExpired:      authError,
	StatusAuthDenied:       authError,
	StatusEndpointUnknown:  endpointUnknown,
	StatusNotFound:         notFound,
	StatusDuplicate:        duplicate,
	StatusRateLimited:      rateLimit,
	StatusNetwork:          network,
	StatusTimeout:          network,
	StatusProviderDown:     providerDown,
	StatusSyntax:           codeSyntax,
	StatusFunctionMismatch: functionMismatch,
	StatusFormat:           formatError,
	StatusUnknown:          unknown,
}

// statuses lists the failure statuses in a fixed order.
var statuses = [...]ExecStatus{
	StatusIncompleteFetch, StatusSilentPartialFetch, StatusSchemaIncomplete,
	StatusAuthExpired, StatusAuthDenied,
	StatusEndpointUnknown, StatusNotFound, StatusDuplicate,
	StatusRateLimited, StatusNetwork, StatusTimeout, StatusProviderDown,
	StatusSyntax, StatusFunctionMismatch, StatusFormat,
	StatusUnknown,
}

// allStatuses returns every failure status (all but SUCCEEDED), in a fixed
// order, as a new slice.
func allStatuses() []ExecStatus { return append([]ExecStatus(nil), statuses[:]...) }

// categoryOf looks the status up in the status table. ok is false for
// SUCCEEDED and for a status the table does not hold; callers that must
// have a category use unknown then, as [New] does.
func categoryOf(s ExecStatus) (c Category, ok bool) {
	c, ok = signals[s]
	return c, ok
}

// statusForHTTP is the execution status of an HTTP response with the given
// status code. Codes below 400 are not failures and give [StatusUnknown]: an
// error carrying a 2xx status failed for a reason the status does not tell.
//
//	400, 413, 415, 422  FAILED_FORMAT          the request was malformed
//	401, 407            FAILED_AUTH_EXPIRED    credentials missing or rejected
//	403                 FAILED_AUTH_DENIED     credentials without permission
//	404, 410            FAILED_NOT_FOUND       the operation exists, the resource does not
//	405, 501            FAILED_ENDPOINT_UNKNOWN the operation is not offered
//	408, 504            FAILED_TIMEOUT         nobody answered in time
//	409                 FAILED_DUPLICATE       the effect exists already
//	429                 FAILED_RATE_LIMITED
//	502                 FAILED_NETWORK         a gateway could not reach the origin
//	500, 503, other 5xx FAILED_PROVIDER_DOWN   the origin itself is failing
//	other 4xx, < 400    FAILED_UNKNOWN
//
// 404 is read as a missing resource, not a missing endpoint: servers answer
// 404 for both, and the two categories route to the same research loop and
// both end a grant, so only the diagnosis differs. 405 and 501 are
// unambiguous: the path or the server exists and does not offer the
// operation. 502 and 504 come from a gateway on the way and are retried
// with jitter; 500 and 503 come from the provider and lead to failover.
func statusForHTTP(code int) ExecStatus {
	switch code {
	case 400, 413, 415, 422:
		return StatusFormat
	case 401, 407:
		return StatusAuthExpired
	case 403:
		return StatusAuthDenied
	case 404, 410:
		return StatusNotFound
	case 405, 501:
		return StatusEndpointUnknown
	case 408, 504:
		return StatusTimeout
	case 409:
		return StatusDuplicate
	case 429:
		return StatusRateLimited
	case 502:
		return StatusNetwork
	}
	if code >= 500 && code <= 599 {
		return StatusProviderDown
	}
	return StatusUnknown
}

// fromHTTPStatus is the category of an HTTP failure status: the category of
// statusForHTTP.
func fromHTTPStatus(code int) Category {
	c, _ := categoryOf(statusForHTTP(code))
	return c
}
