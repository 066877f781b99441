package failure

import "testing"

// The legacy matcher is a fallback; these cases pin its order down so that
// a change to it is a visible change.
func TestClassifyLegacy(t *testing.T) {
	for msg, want := range map[string]ExecStatus{
		// Exception names first, even over an HTTP code in the text.
		`Traceback: File "f.py", line 12 IndentationError: unexpected indent`: StatusSyntax,
		`SyntaxError: invalid syntax after HTTP 500`:                          StatusSyntax,
		`json.decoder.JSONDecodeError: Expecting value`:                       StatusFormat,
		`AttributeError: 'NoneType' object has no attribute 'get'`:            StatusFunctionMismatch,
		`TypeError: fetch() missing 1 required positional argument`:           StatusFunctionMismatch,
		// HTTP codes of 400 or more, in the forms clients print them.
		`llm: endpoint failed after 1 attempt(s) [HTTP 429]: HTTP 429: {}`: StatusRateLimited,
		`unexpected response: HTTP/1.1 404 Not Found`:                      StatusNotFound,
		`request failed with status code: 503`:                             StatusProviderDown,
		`upstream status=502`:                                              StatusNetwork,
		`[HTTP 200]: not a chat completion (invalid character 'x')`:        StatusFormat,
		// Phrases.
		`401 Unauthorized`:                            StatusAuthExpired,
		`the token has expired`:                       StatusAuthExpired,
		`403 Forbidden`:                               StatusAuthDenied,
		`open /etc/x: permission denied`:              StatusAuthDenied,
		`Rate limit reached for requests`:             StatusRateLimited,
		`quota exceeded for this month`:               StatusRateLimited,
		`405 Method Not Allowed`:                      StatusEndpointUnknown,
		`i/o timeout`:                                 StatusTimeout,
		`the operation timed out`:                     StatusTimeout,
		`dial tcp: connection refused`:                StatusNetwork,
		`ConnectionRefusedError: [Errno 111]`:         StatusNetwork,
		`lookup api.example: no such host`:            StatusNetwork,
		`The model is overloaded`:                     StatusProviderDown,
		`502 Bad Gateway`:                             StatusNetwork,
		`record already exists`:                       StatusDuplicate,
		`endpoint /v2/x not found`:                    StatusNotFound,
		`stat f.json: no such file or directory`:      StatusNotFound,
		`ERROR: syntax error at or near "SELEC"`:      StatusSyntax,
		`undefined: fetchAll`:                         StatusFunctionMismatch,
		`json: cannot unmarshal string into Go value`: StatusFormat,
		// Nothing.
		`request took 1429 ms and then something odd happened`: StatusUnknown,
		``: StatusUnknown,
	} {
		if got := classifyLegacy(msg); got != want {
			t.Errorf("classifyLegacy(%q) = %s, want %s", msg, got, want)
		}
	}
}
