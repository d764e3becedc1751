// Package bodyprefix reads the first bytes of a body and puts them back in
// front of the rest, for the root package and package retry, which both
// look at the start of a response body (retry.Check.Body, and the response
// an AttemptsError keeps) without taking it from the caller.
package bodyprefix

import (
	"bytes"
	"io"
)

// Max is how much of a response body retry.Check.Body reads, and how much
// of it an AttemptsError made by Transport.ErrorOnGiveUp keeps: 4 KiB,
// enough for an API's error object.
const Max = 4 << 10

// Read reads at most n bytes of body without closing it. err is the read
// error, if any other than io.EOF; the bytes read before it are returned.
func Read(body io.Reader, n int64) ([]byte, error) {
	return io.ReadAll(io.LimitReader(body, n))
}

// Prepend returns a body that reads prefix, then the rest of orig, and
// whose Close closes orig.
func Prepend(prefix []byte, orig io.ReadCloser) io.ReadCloser {
	return Join(bytes.NewReader(prefix), orig)
}

// Join returns a body that reads first, then the rest of orig, and whose
// Close closes orig (first is not closed).
func Join(first io.Reader, orig io.ReadCloser) io.ReadCloser {
	return &body{Reader: io.MultiReader(first, orig), orig: orig}
}

// body is bytes already read, then the rest of a body whose Close it
// forwards.
type body struct {
	io.Reader
	orig io.Closer
}

func (b *body) Close() error { return b.orig.Close() }
