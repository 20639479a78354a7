package limitio_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/gauntlet-eval/gauntlet/internal/limitio"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func (c *countingReader) Close() error { return nil }

func TestReader(t *testing.T) {
	errTooLarge := errors.New("too large")
	for _, tc := range []struct {
		name       string
		size       int
		limit      int64
		tooLarge   bool
		passed     int
		maxRead    int
		bufferSize int
	}{
		{name: "shorter", size: 10, limit: 100, passed: 10, maxRead: 10, bufferSize: 512},
		{name: "empty", size: 0, limit: 100, passed: 0, maxRead: 0, bufferSize: 512},
		{name: "exactly the limit", size: 100, limit: 100, passed: 100, maxRead: 100, bufferSize: 512},
		{name: "one byte more", size: 101, limit: 100, tooLarge: true, passed: 100, maxRead: 101, bufferSize: 512},
		{name: "much more", size: 1 << 20, limit: 100, tooLarge: true, passed: 100, maxRead: 101, bufferSize: 512},
		{name: "small reads", size: 1 << 20, limit: 100, tooLarge: true, passed: 100, maxRead: 101, bufferSize: 7},
		{name: "zero limit", size: 1, limit: 0, tooLarge: true, passed: 0, maxRead: 1, bufferSize: 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingReader{r: bytes.NewReader(make([]byte, tc.size))}
			r := limitio.New(src, tc.limit, errTooLarge)
			var got []byte
			var err error
			buf := make([]byte, tc.bufferSize)
			for {
				var n int
				n, err = r.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					break
				}
			}
			if tc.tooLarge != (err == errTooLarge) || (!tc.tooLarge && err != io.EOF) {
				t.Fatalf("err %v", err)
			}
			if len(got) != tc.passed || src.n > tc.maxRead {
				t.Fatalf("passed %d (want %d), read %d (want at most %d)", len(got), tc.passed, src.n, tc.maxRead)
			}
			if r.EOF() == tc.tooLarge {
				t.Errorf("EOF() = %v for a body that was too large: %v", r.EOF(), tc.tooLarge)
			}
			if n, err2 := r.Read(make([]byte, 10)); n != 0 || err2 != err {
				t.Fatalf("read after the end: %d, %v; want 0, %v", n, err2, err)
			}
		})
	}
}

// TestReaderNotReadToItsEnd: a body read in part has not reached its end.
func TestReaderNotReadToItsEnd(t *testing.T) {
	r := limitio.New(io.NopCloser(bytes.NewReader(make([]byte, 50))), 100, errors.New("too large"))
	if n, err := r.Read(make([]byte, 10)); n != 10 || err != nil {
		t.Fatalf("Read = %d, %v", n, err)
	}
	if r.EOF() {
		t.Fatal("EOF() after 10 of 50 bytes")
	}
	if n, err := r.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}
