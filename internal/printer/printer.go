package printer

import (
	"fmt"
	"io"
)

// Writer writes to W and keeps the first error, so that a report can be
// written line by line without checking each and the error read once at
// the end: after a failed write, every later write fails with it. A
// Writer is for one goroutine.
type Writer struct {
	W   io.Writer
	Err error
}

// Write implements io.Writer.
func (p *Writer) Write(b []byte) (int, error) {
	if p.Err != nil {
		return 0, p.Err
	}
	n, err := p.W.Write(b)
	p.Err = err
	return n, err
}

// Printf formats to the writer; a failure is kept in Err.
func (p *Writer) Printf(format string, a ...any) { fmt.Fprintf(p, format, a...) }
