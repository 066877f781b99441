package printer

import (
	"errors"
	"strings"
	"testing"
)

// failAfter accepts n writes, then fails.
type failAfter struct {
	n   int
	out strings.Builder
}

var errFull = errors.New("full")

func (f *failAfter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, errFull
	}
	f.n--
	return f.out.Write(b)
}

// TestKeepsFirstError: writes go through until one fails; that error is
// kept and every later write returns it without reaching the writer.
func TestKeepsFirstError(t *testing.T) {
	f := &failAfter{n: 1}
	p := &Writer{W: f}
	p.Printf("a%d", 1)
	p.Printf("b")
	f.n = 5 // the writer would accept again: the Writer must not try
	p.Printf("c")
	if !errors.Is(p.Err, errFull) || f.out.String() != "a1" {
		t.Errorf("err %v, written %q", p.Err, f.out.String())
	}
}
