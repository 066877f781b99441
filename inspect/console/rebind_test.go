package console_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/inspect/console"
	"github.com/blackboardkernel/bk/internal/inspect"
	bkserve "github.com/blackboardkernel/bk/internal/inspect/serve"
)

// TestAttackDNSRebinding: a page of evil.example, whose name an attacker
// rebound to the console's address, is same-origin to itself: it can set
// the proxy's identity header, read the inbox and its CSRF token, and post
// a decision. The console refuses every request addressed to a host it
// does not serve, in both identity modes, before anything is read; an IP
// address, localhost and a listed host are served.
func TestAttackDNSRebinding(t *testing.T) {
	d := newDesk(t, "A1")
	c, err := console.New(console.Config{Store: d.s, Identity: console.HeaderIdentity("X-User"), Hosts: []string{"approvals.example"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	const evil = "evil.example:8080"
	as := func(r *http.Request, host string) *httptest.ResponseRecorder {
		r.Host = host
		r.Header.Set("X-User", "human:mallory")
		r.Header.Set("Origin", "http://"+host)
		r.Header.Set("Sec-Fetch-Site", "same-origin")
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		return w
	}
	inbox := as(httptest.NewRequest("GET", "/", nil), evil)
	if inbox.Code != http.StatusMisdirectedRequest || strings.Contains(inbox.Body.String(), d.action) {
		t.Errorf("the rebound page reads the inbox: %d\n%s", inbox.Code, inbox.Body)
	}
	f := url.Values{"decision": {"approve"}, "note": {"rebound"}}
	for _, m := range hiddenRE.FindAllStringSubmatch(inbox.Body.String(), -1) {
		f.Set(m[1], html.UnescapeString(m[2]))
	}
	post := httptest.NewRequest("POST", "/decide", strings.NewReader(f.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w := as(post, evil); w.Code != http.StatusMisdirectedRequest {
		t.Errorf("the rebound page posts a decision: %d\n%s", w.Code, w.Body)
	}
	if n := d.approvals(t); n != 0 {
		t.Errorf("%d approvals recorded from the rebound page", n)
	}
	// The token mode too: the desk's own server, addressed as evil.example.
	req, _ := http.NewRequest("GET", d.srv.URL+"/", nil)
	req.Host = evil
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	if code, body, _ := do(t, req); code != http.StatusMisdirectedRequest {
		t.Errorf("token mode, host %s: %d\n%s", evil, code, body)
	}
	for _, host := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080", "approvals.example", "APPROVALS.example:443"} {
		if w := as(httptest.NewRequest("GET", "/", nil), host); w.Code != http.StatusOK {
			t.Errorf("host %s: %d, want it served", host, w.Code)
		}
	}
}

// TestAttackTokenFileMode: a token file group or others may read (a token
// is an approver's name) or write (a line adds one) is refused, by
// ReadTokens and by bk serve, which then listens nowhere.
func TestAttackTokenFileMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tokens")
	if err := os.WriteFile(p, []byte(aliceToken+" human:alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := console.ReadTokens(p); err != nil {
		t.Fatalf("mode 0600: %v", err)
	}
	for _, mode := range []os.FileMode{0o644, 0o604, 0o620, 0o666} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := console.ReadTokens(p); !errors.Is(err, console.ErrInvalidConfig) {
			t.Errorf("mode %#o: %v, want ErrInvalidConfig", mode, err)
		}
		// A console that started would serve until the context ends.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := bkserve.Run(ctx, inspect.ServeConfig{Store: newDesk(t, "A1").s, Addr: "127.0.0.1:0", TokenFile: p})
		cancel()
		if !errors.Is(err, console.ErrInvalidConfig) {
			t.Errorf("bk serve with mode %#o: %v, want ErrInvalidConfig", mode, err)
		}
	}
}
