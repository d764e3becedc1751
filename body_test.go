package pace

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pacehttp/pace/internal/retryrule"
)

// oneShotBody is a request body that can be read once, with no length
// net/http could know, and that counts reads and closes; it is safe to use
// from the goroutine net/http writes the body on.
type oneShotBody struct {
	r      io.Reader
	read   atomic.Int64
	closed atomic.Int32
}

func newOneShotBody(s string) *oneShotBody { return &oneShotBody{r: strings.NewReader(s)} }

func (b *oneShotBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read.Add(int64(n))
	return n, err
}

func (b *oneShotBody) Close() error { b.closed.Add(1); return nil }

// requestSnapshot is what the RoundTripper contract forbids changing in the
// caller's request.
type requestSnapshot struct {
	method        string
	url           string
	header        http.Header
	body          io.ReadCloser
	hasGetBody    bool
	contentLength int64
	ctx           context.Context
}

func snapshot(r *http.Request) requestSnapshot {
	return requestSnapshot{r.Method, r.URL.String(), r.Header.Clone(), r.Body, r.GetBody != nil, r.ContentLength, r.Context()}
}

func (s requestSnapshot) check(t *testing.T, r *http.Request) {
	t.Helper()
	if got := snapshot(r); got.method != s.method || got.url != s.url || !equalHeader(got.header, s.header) ||
		got.body != s.body || got.hasGetBody != s.hasGetBody || got.contentLength != s.contentLength || got.ctx != s.ctx {
		t.Errorf("caller's request changed: %+v, was %+v", got, s)
	}
}

// recordingServer records, per request, the body bytes and the
// Content-Length the server saw, and answers 503.
type recordingServer struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []string
	lengths []string
}

func newRecordingServer(t *testing.T) *recordingServer {
	rs := &recordingServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rs.mu.Lock()
		rs.bodies = append(rs.bodies, string(b))
		rs.lengths = append(rs.lengths, r.Header.Get("Content-Length"))
		rs.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *recordingServer) seen() ([]string, []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.bodies), slices.Clone(rs.lengths)
}

// send sends r through tr and drains the response.
func send(t *testing.T, tr http.RoundTripper, r *http.Request) {
	t.Helper()
	resp, err := tr.RoundTrip(r)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	retryrule.Drain(resp.Body)
}

// TestPrepareBodyOneShot is philippta/trip#1 at the body level: a POST of "hello
// world" from a one-shot reader without GetBody reaches the server byte for
// byte, with Content-Length 11, on both attempts; the caller's body is
// closed and the caller's request is unchanged.
func TestPrepareBodyOneShot(t *testing.T) {
	for _, declared := range []int64{11, 0, -1} { // declared length, unknown (0 and -1)
		t.Run("ContentLength "+strconv.FormatInt(declared, 10), func(t *testing.T) {
			srv := newRecordingServer(t)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			body := newOneShotBody("hello world")
			req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
			req.ContentLength = declared
			before := snapshot(req)

			first, replayable, err := prepareBody(req, DefaultMaxBufferedBody)
			if err != nil || !replayable || first == req {
				t.Fatalf("prepareBody = %p, %v, %v; want a replayable clone", first, replayable, err)
			}
			send(t, tr, first)
			second, err := rewindBody(req.Context(), first)
			if err != nil {
				t.Fatalf("rewindBody: %v", err)
			}
			send(t, tr, second)

			bodies, lengths := srv.seen()
			if !slices.Equal(bodies, []string{"hello world", "hello world"}) || !slices.Equal(lengths, []string{"11", "11"}) {
				t.Errorf("server saw bodies %q with Content-Length %q; want \"hello world\" and 11 twice", bodies, lengths)
			}
			if n := body.closed.Load(); n != 1 {
				t.Errorf("caller's body closed %d times, want 1", n)
			}
			before.check(t, req)
		})
	}
}

// TestPrepareBodyOverLimit checks that a body longer than the limit is sent
// once, complete, under its declared or unknown length, and is not
// replayable; the caller's body is closed by the send.
func TestPrepareBodyOverLimit(t *testing.T) {
	const payload = "hello world"
	for _, declared := range []int64{0, 11} {
		t.Run("ContentLength "+strconv.FormatInt(declared, 10), func(t *testing.T) {
			srv := newRecordingServer(t)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			body := newOneShotBody(payload)
			req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
			req.ContentLength = declared
			before := snapshot(req)

			first, replayable, err := prepareBody(req, 4)
			if err != nil || replayable {
				t.Fatalf("prepareBody(limit 4) = %v, %v; want not replayable", replayable, err)
			}
			if declared > 4 && (first != req || body.read.Load() != 0) {
				t.Errorf("declared length above the limit: read %d bytes, returned a clone %v; want nothing read, req itself", body.read.Load(), first != req)
			}
			if body.closed.Load() != 0 {
				t.Error("caller's body closed before it was sent")
			}
			send(t, tr, first)
			if _, err := rewindBody(req.Context(), first); !errors.Is(err, errBodyNotReplayable) {
				t.Errorf("rewindBody over the limit = %v, want errBodyNotReplayable", err)
			}
			bodies, _ := srv.seen()
			if !slices.Equal(bodies, []string{payload}) {
				t.Errorf("server saw %q, want the whole body %q once", bodies, payload)
			}
			if n := body.closed.Load(); n < 1 {
				t.Error("caller's body was not closed after the send")
			}
			before.check(t, req)
		})
	}
}

func TestPrepareBodyPassThrough(t *testing.T) {
	withGetBody, _ := http.NewRequest(http.MethodPut, "http://api.test/", strings.NewReader("abc"))
	noBody, _ := http.NewRequest(http.MethodPost, "http://api.test/", http.NoBody)
	nilBody, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	for name, req := range map[string]*http.Request{"GetBody": withGetBody, "NoBody": noBody, "nil": nilBody} {
		t.Run(name, func(t *testing.T) {
			out, replayable, err := prepareBody(req, DefaultMaxBufferedBody)
			if out != req || !replayable || err != nil {
				t.Fatalf("prepareBody = %p (req %p), %v, %v; want req itself, replayable", out, req, replayable, err)
			}
			again, err := rewindBody(req.Context(), out)
			if err != nil || again == req {
				t.Fatalf("rewindBody = %v, %v; want a clone", again, err)
			}
			if again.Body != nil && again.Body != http.NoBody {
				if b, _ := io.ReadAll(again.Body); string(b) != "abc" {
					t.Errorf("rewound body = %q, want abc", b)
				}
			}
		})
	}
}

func TestPrepareBodyEdges(t *testing.T) {
	t.Run("empty one-shot body", func(t *testing.T) {
		body := newOneShotBody("")
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/", body)
		out, replayable, err := prepareBody(req, DefaultMaxBufferedBody)
		if err != nil || !replayable || out.Body != http.NoBody || out.ContentLength != 0 || body.closed.Load() != 1 {
			t.Errorf("empty body: Body %v, length %d, replayable %v, err %v, closed %d", out.Body, out.ContentLength, replayable, err, body.closed.Load())
		}
	})
	t.Run("negative limit never buffers", func(t *testing.T) {
		body := newOneShotBody("x")
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/", body)
		out, replayable, err := prepareBody(req, -1)
		if out != req || replayable || err != nil || body.read.Load() != 0 {
			t.Errorf("limit -1: same %v, replayable %v, err %v, read %d", out == req, replayable, err, body.read.Load())
		}
	})
	t.Run("zero limit means the default", func(t *testing.T) {
		big := strings.Repeat("x", DefaultMaxBufferedBody)
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/", newOneShotBody(big))
		if _, replayable, _ := prepareBody(req, 0); !replayable {
			t.Error("a body of exactly DefaultMaxBufferedBody was not buffered with limit 0")
		}
		req, _ = http.NewRequest(http.MethodPost, "http://api.test/", newOneShotBody(big+"x"))
		if _, replayable, _ := prepareBody(req, 0); replayable {
			t.Error("a body one byte over DefaultMaxBufferedBody was buffered with limit 0")
		}
	})
	t.Run("largest limit", func(t *testing.T) {
		// limit+1 once wrapped to a negative count: nothing was read and the
		// body was replaced by an empty one.
		body := newOneShotBody("hello")
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/", body)
		out, replayable, err := prepareBody(req, math.MaxInt64)
		if err != nil || !replayable || out.ContentLength != 5 {
			t.Fatalf("limit MaxInt64: length %d, replayable %v, err %v; want 5, true, nil", out.ContentLength, replayable, err)
		}
		if got, _ := io.ReadAll(out.Body); string(got) != "hello" {
			t.Errorf("limit MaxInt64: body %q, want %q", got, "hello")
		}
	})
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("disk on fire")
		body := &oneShotBody{r: io.MultiReader(strings.NewReader("abc"), &failingReader{boom})}
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/", body)
		before := snapshot(req)
		out, replayable, err := prepareBody(req, DefaultMaxBufferedBody)
		if out != nil || replayable || !errors.Is(err, boom) || body.closed.Load() != 1 {
			t.Errorf("read error: out %v, replayable %v, err %v, closed %d; want nil, false, the error, closed", out, replayable, err, body.closed.Load())
		}
		before.check(t, req)
	})
	t.Run("GetBody failing on rewind", func(t *testing.T) {
		boom := errors.New("gone")
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/", strings.NewReader("abc"))
		req.GetBody = func() (io.ReadCloser, error) { return nil, boom }
		if _, err := rewindBody(req.Context(), req); !errors.Is(err, boom) {
			t.Errorf("rewindBody = %v, want it to wrap %v", err, boom)
		}
	})
	t.Run("rewind uses the new context", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
		ctx := context.WithValue(context.Background(), ctxKey{}, 1)
		if out, _ := rewindBody(ctx, req); out.Context() != ctx {
			t.Error("rewindBody did not set the attempt's context")
		}
	})
	t.Run("close request body", func(t *testing.T) {
		body := newOneShotBody("x")
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/", body)
		closeRequestBody(req)
		closeRequestBody(nil)
		closeRequestBody(&http.Request{})
		if body.closed.Load() != 1 {
			t.Error("closeRequestBody did not close the body")
		}
	})
}

type ctxKey struct{}

type failingReader struct{ err error }

func (r *failingReader) Read([]byte) (int, error) { return 0, r.err }

func BenchmarkPrepareBodyBuffered(b *testing.B) {
	payload := strings.Repeat("x", 1024)
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/", io.NopCloser(strings.NewReader(payload)))
		if _, ok, _ := prepareBody(req, DefaultMaxBufferedBody); !ok {
			b.Fatal("not replayable")
		}
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
