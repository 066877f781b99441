package console_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/blackboardkernel/bk/inspect/console"
	"github.com/blackboardkernel/bk/store/memstore"
)

// A console behind a reverse proxy that names the person in X-User and
// forwards the host name approvals.example: a request without the header
// is refused, and so is one addressed to another host (a page rebound to
// the console's address); with both, the inbox is shown.
func ExampleNew() {
	c, err := console.New(console.Config{Store: memstore.New(), Identity: console.HeaderIdentity("X-User"), Hosts: []string{"approvals.example"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	w := httptest.NewRecorder()
	c.ServeHTTP(w, httptest.NewRequest("GET", "https://approvals.example/", nil))
	fmt.Println("anonymous:", w.Code)

	r := httptest.NewRequest("GET", "https://rebound.example/", nil)
	r.Header.Set("X-User", "human:maria")
	w = httptest.NewRecorder()
	c.ServeHTTP(w, r)
	fmt.Println("another host:", w.Code)

	r = httptest.NewRequest("GET", "https://approvals.example/", nil)
	r.Header.Set("X-User", "human:maria")
	w = httptest.NewRecorder()
	c.ServeHTTP(w, r)
	fmt.Println("human:maria:", w.Code, strings.Contains(w.Body.String(), "No approvals pending."))
	// Output:
	// anonymous: 401
	// another host: 421
	// human:maria: 200 true
}
