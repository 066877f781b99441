package console_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/blackboardkernel/bk/inspect/console"
	"github.com/blackboardkernel/bk/store/memstore"
)

// A console behind a reverse proxy that names the person in X-User: a
// request without the header is refused; with it, the inbox is shown.
func ExampleNew() {
	c, err := console.New(memstore.New(), console.HeaderIdentity("X-User"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	fmt.Println("anonymous:", w.Code)

	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-User", "human:maria")
	w = httptest.NewRecorder()
	c.ServeHTTP(w, r)
	fmt.Println("human:maria:", w.Code, strings.Contains(w.Body.String(), "No approvals pending."))
	// Output:
	// anonymous: 401
	// human:maria: 200 true
}
