// Package limitio bounds how much of a body is read: the request bodies
// the server takes and the response bodies the LLM client reads go
// through the same Reader, each with its own error for a body too large.
// It depends on nothing of the project, so that the server and the
// harness below it both use it while neither imports the other's code
// for it.
package limitio

import (
	"io"
	"sync/atomic"
)

// Reader reads at most limit bytes from a body: those pass, and the next
// one turns into the error given to New (as http.MaxBytesReader does),
// without reading on. It asks its source for one byte more than may pass,
// which tells a body of exactly limit bytes from a longer one. Once a
// Read fails, every later Read fails with the same error.
type Reader struct {
	src      io.ReadCloser
	left     int64 // bytes that may still pass
	tooLarge error
	err      error
	eof      atomic.Bool
}

// New returns a Reader of src that lets limit bytes pass and fails with
// tooLarge past them.
func New(src io.ReadCloser, limit int64, tooLarge error) *Reader {
	return &Reader{src: src, left: limit, tooLarge: tooLarge}
}

// Read reads from the source, within the limit.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > r.left+1 {
		p = p[:r.left+1]
	}
	n, err := r.src.Read(p)
	if int64(n) > r.left {
		n, r.left = int(r.left), 0
		r.err = r.tooLarge
		return n, r.err
	}
	r.left -= int64(n)
	if err == io.EOF {
		r.eof.Store(true)
	}
	if err != nil {
		r.err = err
	}
	return n, err
}

// Close closes the source.
func (r *Reader) Close() error { return r.src.Close() }

// EOF reports whether the body was read to its end, within the limit. It
// may be called from another goroutine than the one reading.
func (r *Reader) EOF() bool { return r.eof.Load() }
