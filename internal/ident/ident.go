package ident

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Check reports why s cannot serve as a name the kernel keys records by (a
// trace id, a namespace, a caller, a tool or belief name): it must be 1 to
// limit bytes of valid UTF-8 with no control character, so that no two
// names spell one key and no name breaks a line of output.
func Check(s string, limit int) error {
	switch {
	case s == "":
		return errors.New("empty name")
	case len(s) > limit:
		return fmt.Errorf("longer than %d bytes", limit)
	case !utf8.ValidString(s):
		return errors.New("name is not valid UTF-8")
	case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return errors.New("name contains a control character")
	}
	return nil
}
