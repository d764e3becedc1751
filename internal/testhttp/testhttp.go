// Package testhttp holds test doubles for http.RoundTripper code: a
// function adapter, canned responses, scripted servers that record what
// they received, and bodies that report whether they were closed. It uses no
// sockets, so it works inside testing/synctest bubbles.
package testhttp

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RoundTripperFunc adapts a function to http.RoundTripper.
type RoundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f(req).
func (f RoundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Response returns a response with the given status code and headers, given
// as name, value pairs, and an empty tracked body. A trailing odd name is
// ignored.
func Response(code int, headerKV ...string) *http.Response {
	return ResponseBody(code, "", headerKV...)
}

// ResponseBody is Response with body text.
func ResponseBody(code int, body string, headerKV ...string) *http.Response {
	h := make(http.Header, len(headerKV)/2)
	for i := 0; i+1 < len(headerKV); i += 2 {
		h.Add(headerKV[i], headerKV[i+1])
	}
	return &http.Response{
		Status:        strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          NewBody(body),
		ContentLength: int64(len(body)),
	}
}

// Body is an io.ReadCloser over fixed bytes that records how much was read
// and whether it was closed. It is safe for concurrent use.
type Body struct {
	mu     sync.Mutex
	r      *bytes.Reader
	read   int
	closed bool
}

// NewBody returns a Body holding s.
func NewBody(s string) *Body { return &Body{r: bytes.NewReader([]byte(s))} }

// Read reads from the body; after Close it returns an error.
func (b *Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errClosed
	}
	n, err := b.r.Read(p)
	b.read += n
	return n, err
}

// Close marks the body closed.
func (b *Body) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// Closed reports whether Close was called.
func (b *Body) Closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// BytesRead reports how many bytes were read.
func (b *Body) BytesRead() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read
}

type closedError struct{}

func (closedError) Error() string { return "testhttp: read on closed body" }

var errClosed error = closedError{}

// OneShot is a request body without GetBody: a reader that can be read once
// and reports whether it was closed.
type OneShot struct {
	io.Reader
	closed atomic.Bool
}

// NewOneShot returns a one-shot body holding s.
func NewOneShot(s string) *OneShot { return &OneShot{Reader: bytes.NewReader([]byte(s))} }

// Close marks the body closed.
func (o *OneShot) Close() error { o.closed.Store(true); return nil }

// Closed reports whether Close was called.
func (o *OneShot) Closed() bool { return o.closed.Load() }

// Received is what a Server saw of one request.
type Received struct {
	At            time.Time
	Method        string
	URL           string
	Header        http.Header
	Body          []byte
	ContentLength int64
}

// Step is one scripted answer: a response built by Respond, or Err.
type Step struct {
	Respond func() *http.Response
	Err     error
}

// Status is a Step answering code with the given header pairs.
func Status(code int, headerKV ...string) Step {
	return Step{Respond: func() *http.Response { return Response(code, headerKV...) }}
}

// Fail is a Step failing with err.
func Fail(err error) Step { return Step{Err: err} }

// Server is an in-memory http.RoundTripper that records every request it
// receives, reading and closing its body as a real transport does, and
// answers with Handle or, if Handle is nil, with the Steps in order (the
// last one repeating). It is safe for concurrent use.
type Server struct {
	Steps  []Step
	Handle func(n int, r Received) (*http.Response, error) // n counts from 1

	mu   sync.Mutex
	seen []Received
	resp []*http.Response
}

// RoundTrip records req and answers it.
func (s *Server) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := Received{
		At:            time.Now(),
		Method:        req.Method,
		URL:           req.URL.String(),
		Header:        req.Header.Clone(),
		ContentLength: req.ContentLength,
	}
	if req.Body != nil {
		rec.Body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	s.mu.Lock()
	s.seen = append(s.seen, rec)
	n := len(s.seen)
	s.mu.Unlock()

	var resp *http.Response
	var err error
	switch {
	case s.Handle != nil:
		resp, err = s.Handle(n, rec)
	case len(s.Steps) > 0:
		st := s.Steps[min(n, len(s.Steps))-1]
		if st.Err != nil {
			err = st.Err
		} else {
			resp = st.Respond()
		}
	default:
		resp = Response(http.StatusOK)
	}
	if resp != nil {
		resp.Request = req
		s.mu.Lock()
		s.resp = append(s.resp, resp)
		s.mu.Unlock()
	}
	return resp, err
}

// Requests returns a copy of what was received so far.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.seen...)
}

// Count returns how many requests were received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// Responses returns the responses handed out so far.
func (s *Server) Responses() []*http.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Response(nil), s.resp...)
}

// Snapshot is a deep copy of the parts of a request a RoundTripper must not
// change, for comparing a request before and after RoundTrip.
type Snapshot struct {
	Method        string
	URL           string
	Proto         string
	Header        http.Header
	Trailer       http.Header
	Body          io.ReadCloser
	HasGetBody    bool
	ContentLength int64
	Host          string
	Close         bool
}

// Snap takes a Snapshot of req.
func Snap(req *http.Request) Snapshot {
	return Snapshot{
		Method:        req.Method,
		URL:           req.URL.String(),
		Proto:         req.Proto,
		Header:        req.Header.Clone(),
		Trailer:       req.Trailer.Clone(),
		Body:          req.Body,
		HasGetBody:    req.GetBody != nil,
		ContentLength: req.ContentLength,
		Host:          req.Host,
		Close:         req.Close,
	}
}

// Diff returns a description of the first difference between s and a new
// snapshot of req, or "" when there is none.
func (s Snapshot) Diff(req *http.Request) string {
	n := Snap(req)
	switch {
	case s.Method != n.Method:
		return "Method " + s.Method + " -> " + n.Method
	case s.URL != n.URL:
		return "URL " + s.URL + " -> " + n.URL
	case s.Proto != n.Proto:
		return "Proto changed"
	case !sameHeader(s.Header, n.Header):
		return "Header changed"
	case !sameHeader(s.Trailer, n.Trailer):
		return "Trailer changed"
	case s.Body != n.Body:
		return "Body replaced"
	case s.HasGetBody != n.HasGetBody:
		return "GetBody changed"
	case s.ContentLength != n.ContentLength:
		return "ContentLength changed"
	case s.Host != n.Host:
		return "Host changed"
	case s.Close != n.Close:
		return "Close changed"
	}
	return ""
}

func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || len(va) != len(vb) {
			return false
		}
		for i := range va {
			if va[i] != vb[i] {
				return false
			}
		}
	}
	return true
}
