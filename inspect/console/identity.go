package console

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// Identity names the person behind a request, as the deployment vouches
// for it; ok is false when the request names nobody. The console decides
// and writes approvals as this name ([toolgate.Gate.Approver]), so it must
// come from something the person cannot forge: a reverse proxy's header
// ([HeaderIdentity]) or a secret token ([TokenIdentity]).
type Identity func(r *http.Request) (name string, ok bool)

// HeaderIdentity trusts the request header name, which a reverse proxy in
// front of the console sets after it authenticated the person (and strips
// from what clients send). Use it only behind such a proxy: anyone who
// reaches the console directly can set the header.
func HeaderIdentity(name string) Identity {
	return func(r *http.Request) (string, bool) {
		v := strings.TrimSpace(r.Header.Get(name))
		return v, v != "" && validName(v)
	}
}

// TokenIdentity maps secret tokens to names: a request carries its token
// as a bearer token (Authorization: Bearer TOKEN) or, from a browser, as
// the password of HTTP basic authentication (the user name is ignored).
// Tokens are held by their SHA-256 digest, so that the lookup reveals
// nothing of a token by its timing.
func TokenIdentity(tokens map[string]string) Identity {
	byDigest := make(map[[32]byte]string, len(tokens))
	for tok, name := range tokens {
		byDigest[sha256.Sum256([]byte(tok))] = name
	}
	return func(r *http.Request) (string, bool) {
		tok := ""
		if _, pass, ok := r.BasicAuth(); ok {
			tok = pass
		} else if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			tok = strings.TrimSpace(v)
		}
		if tok == "" {
			return "", false
		}
		name, ok := byDigest[sha256.Sum256([]byte(tok))]
		return name, ok
	}
}

// minToken is the shortest token ReadTokens accepts: a guessable token
// would make its name anyone's.
const minToken = 16

// ReadTokens reads a token file for [TokenIdentity]: one "TOKEN NAME" a
// line, separated by white space; blank lines and lines starting with #
// are skipped. A token shorter than 16 characters, a token given twice, a
// line without a name, a file with no token, and a file that is not a
// regular file or that group or others may read or write (want mode 0600
// or 0400: whoever reads a token approves as its name, and whoever writes
// the file adds a name) are [ErrInvalidConfig].
func ReadTokens(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: token file: %w", ErrInvalidConfig, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: token file: %w", ErrInvalidConfig, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: token file %s is not a regular file", ErrInvalidConfig, path)
	}
	if perm := info.Mode().Perm(); !private(perm) {
		return nil, fmt.Errorf("%w: token file %s has mode %#o: group or others may read or write it (want 0600)", ErrInvalidConfig, path, perm)
	}
	tokens := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		bad := func(why string) error {
			return fmt.Errorf("%w: token file %s, line %d: %s", ErrInvalidConfig, path, n, why)
		}
		switch {
		case len(fields) != 2:
			return nil, bad("want TOKEN NAME")
		case len(fields[0]) < minToken:
			return nil, bad(fmt.Sprintf("token shorter than %d characters", minToken))
		case !validName(fields[1]):
			return nil, bad("a name of printable characters, at most 256 bytes")
		case tokens[fields[0]] != "":
			return nil, bad("token given twice")
		}
		tokens[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: token file: %w", ErrInvalidConfig, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: token file %s holds no token", ErrInvalidConfig, path)
	}
	return tokens, nil
}

// validName reports whether an identity is one an approval may record:
// printable, without spaces' edge cases, bounded.
func validName(s string) bool {
	if len(s) > 256 {
		return false
	}
	for _, r := range s {
		if r < 0x21 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// private reports whether a token file's mode lets neither group nor
// others read or write it. The mutation switch mutTokenMode takes any
// mode.
func private(perm os.FileMode) bool {
	if mutTokenMode {
		return true
	}
	return perm&0o077 == 0
}
