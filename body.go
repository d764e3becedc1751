package pace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"

	"github.com/pacehttp/pace/internal/bodyprefix"
)

// DefaultMaxBufferedBody is the default limit, in bytes, on a request body
// that pace reads into memory so that it can send it again: 1 MiB. A body
// with no GetBody and longer than the limit is sent once, complete, and the
// request is not retried (philippta/trip#1): pace never sends an empty or short body.
// Bodies with GetBody (those http.NewRequest builds from a *bytes.Buffer,
// *bytes.Reader or *strings.Reader) are rewound with it and never buffered.
const DefaultMaxBufferedBody = 1 << 20

// errBodyNotReplayable means a retry needs the request body again but it
// cannot be produced: there is no GetBody and pace did not buffer it.
var errBodyNotReplayable = errors.New("pace: request body cannot be sent again")

// prepareBody makes req ready to be sent more than once, following the
// RoundTripper contract (net/http client.go): req itself is never modified,
// and req.Body is always closed, here or by whoever sends the returned
// request. It returns the request for the first attempt and whether its body
// can be sent again, byte for byte, by rewindBody:
//
//   - No body (nil or http.NoBody), or a GetBody: req itself, replayable.
//   - limit < 0, or a declared ContentLength above limit: req itself, not
//     replayable; nothing is read.
//   - Otherwise up to limit+1 bytes are read. If the body ends within limit,
//     it is kept in memory and closed, and a clone of req carries it with a
//     GetBody that returns a fresh reader over the same bytes; an unknown
//     length (ContentLength 0 or -1) becomes the buffered length, so every
//     attempt sends the same Content-Length. A declared length is kept as
//     the caller set it (a wrong one fails in net/http as it would without
//     pace). Replayable.
//   - If the body is longer than limit, a clone of req carries a body that
//     reads the bytes already read and then the rest of req.Body, and whose
//     Close closes req.Body: the body is sent complete, once. Not
//     replayable.
//
// When the result is req itself, the caller must treat it as read-only and
// clone it before changing anything. limit == 0 means
// DefaultMaxBufferedBody. If reading fails, prepareBody closes req.Body and
// returns the error, wrapped. Because a GetBody is set on the clone,
// http.Transport's own replay after an HTTP/2 GOAWAY can also resend the
// body (golang/go#39086, golang/go#25009).
func prepareBody(req *http.Request, limit int64) (out *http.Request, replayable bool, err error) {
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
		return req, true, nil
	}
	if limit == 0 {
		limit = DefaultMaxBufferedBody
	}
	if limit < 0 || req.ContentLength > limit {
		return req, false, nil
	}
	limit = min(limit, math.MaxInt64-1) // limit+1 below must not wrap to a negative count
	var buf bytes.Buffer
	if req.ContentLength > 0 {
		buf.Grow(int(req.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(req.Body, limit+1))
	if err != nil {
		req.Body.Close()
		return nil, false, fmt.Errorf("pace: reading request body: %w", err)
	}
	out = req.Clone(req.Context())
	if n > limit {
		out.Body = bodyprefix.Join(&buf, req.Body) // the bytes read, then the rest; Close closes req.Body
		return out, false, nil
	}
	req.Body.Close()
	data := buf.Bytes()
	if req.ContentLength <= 0 {
		out.ContentLength = int64(len(data))
	}
	if len(data) == 0 && out.ContentLength == 0 {
		out.Body = http.NoBody
		out.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		return out, true, nil
	}
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	out.Body, _ = out.GetBody()
	return out, true, nil
}

// rewindBody returns a clone of r, a request prepareBody returned as
// replayable, for another attempt: with ctx as its context and a fresh Body
// from r.GetBody, so the attempt sends the same bytes with the same
// Content-Length. It returns errBodyNotReplayable when r has a body but no
// GetBody, and GetBody's error, wrapped, when it fails. r is not modified.
func rewindBody(ctx context.Context, r *http.Request) (*http.Request, error) {
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		return nil, errBodyNotReplayable
	}
	out := r.Clone(ctx)
	if r.GetBody == nil {
		return out, nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, fmt.Errorf("pace: rewinding request body: %w", err)
	}
	out.Body = body
	return out, nil
}

// closeRequestBody closes req.Body, as the RoundTripper contract requires on
// every path, including errors before anything was sent. nil is ignored.
func closeRequestBody(req *http.Request) {
	if req != nil && req.Body != nil {
		_ = req.Body.Close()
	}
}
