package retrydecide

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

func newReq(t *testing.T, method string, kv ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, "http://api.test/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	return req
}

// TestDefaultRetryStatusesEveryCode checks every status code from 100 to 599
// against the default policy for a GET: exactly retry.DefaultStatuses are
// retried, and never the permanent ones (aws/aws-sdk-go#1819).
func TestDefaultRetryStatusesEveryCode(t *testing.T) {
	var p retry.Policy
	req := newReq(t, http.MethodGet)
	defaults := retry.DefaultStatuses()
	for code := 100; code <= 599; code++ {
		retry, reason, _ := ex(p).Check(req, testhttp.Response(code), nil, 1)
		if want := slices.Contains(defaults, code); retry != want {
			t.Errorf("default policy, GET, status %d: retry = %v (%s), want %v", code, retry, reason, want)
		}
	}
	for _, code := range []int{400, 401, 403, 404, 405, 409, 422, 501, 505, 506, 510, 511} {
		if retry, _, _ := ex(p).Check(req, testhttp.Response(code), nil, 1); retry {
			t.Errorf("status %d retried by default; aws/aws-sdk-go#1819 says never", code)
		}
	}
	if want := []int{408, 429, 500, 502, 503, 504}; !slices.Equal(defaults, want) {
		t.Errorf("retry.DefaultStatuses() = %v, want %v", defaults, want)
	}
	defaults[0] = 200 // a caller's copy cannot change the defaults
	if slices.Contains(retry.DefaultStatuses(), 200) {
		t.Error("retry.DefaultStatuses returned a shared slice")
	}
}

func TestRetryPolicyCheckResponse(t *testing.T) {
	tests := []struct {
		name       string
		policy     retry.Policy
		method     string
		reqHeaders []string
		resp       *http.Response
		want       bool
		wantReason retry.Reason
	}{
		{"200", retry.Policy{}, "GET", nil, testhttp.Response(200), false, ""},
		{"GET 503", retry.Policy{}, "GET", nil, testhttp.Response(503), true, reasonRetryableStatus},
		{"empty method is GET", retry.Policy{}, "", nil, testhttp.Response(503), true, reasonRetryableStatus},
		{"PUT 429", retry.Policy{}, "PUT", nil, testhttp.Response(429), true, reasonRetryableStatus},
		{"DELETE 502", retry.Policy{}, "DELETE", nil, testhttp.Response(502), true, reasonRetryableStatus},
		{"HEAD OPTIONS TRACE", retry.Policy{}, "TRACE", nil, testhttp.Response(504), true, reasonRetryableStatus},
		{"GET 501", retry.Policy{}, "GET", nil, testhttp.Response(501), false, reasonFinalStatus},
		{"POST 503 no key", retry.Policy{}, "POST", nil, testhttp.Response(503), false, retry.ReasonNotIdempotent},
		{"PATCH 429 no key", retry.Policy{}, "PATCH", nil, testhttp.Response(429), false, retry.ReasonNotIdempotent},
		{"lowercase get is not GET", retry.Policy{}, "get", nil, testhttp.Response(503), false, retry.ReasonNotIdempotent},
		{"POST 503 with key", retry.Policy{}, "POST", []string{"Idempotency-Key", "k1"}, testhttp.Response(503), true, reasonRetryableStatus},
		{"POST 503 with X-Idempotency-Key", retry.Policy{}, "POST", []string{"X-Idempotency-Key", "k1"}, testhttp.Response(503), true, reasonRetryableStatus},
		{"POST 503 empty key", retry.Policy{}, "POST", []string{"Idempotency-Key", ""}, testhttp.Response(503), false, retry.ReasonNotIdempotent},
		{"POST 503 custom header", retry.Policy{IdempotencyHeader: "x-request-key"}, "POST", []string{"X-Request-Key", "k1"}, testhttp.Response(503), true, reasonRetryableStatus},
		{"custom header replaces the default", retry.Policy{IdempotencyHeader: "X-Request-Key"}, "POST", []string{"Idempotency-Key", "k1"}, testhttp.Response(503), false, retry.ReasonNotIdempotent},
		{"POST 503 opt-in", retry.Policy{RetryNonIdempotent: true}, "POST", nil, testhttp.Response(503), true, reasonRetryableStatus},
		{"custom statuses", retry.Policy{Statuses: []int{418}}, "GET", nil, testhttp.Response(418), true, reasonRetryableStatus},
		{"custom statuses replace defaults", retry.Policy{Statuses: []int{418}}, "GET", nil, testhttp.Response(503), false, reasonFinalStatus},
		{"empty statuses retry none", retry.Policy{Statuses: []int{}}, "GET", nil, testhttp.Response(503), false, reasonFinalStatus},
		{"Stripe false beats 503", retry.Policy{}, "GET", nil, testhttp.Response(503, "Stripe-Should-Retry", "false"), false, retry.ReasonServerHint},
		{"Stripe true on 409", retry.Policy{}, "GET", nil, testhttp.Response(409, "Stripe-Should-Retry", "true"), true, reasonServerSaysYes},
		{"Stripe true POST with key", retry.Policy{}, "POST", []string{"Idempotency-Key", "k"}, testhttp.Response(409, "Stripe-Should-Retry", "true"), true, reasonServerSaysYes},
		{"Stripe true POST without key", retry.Policy{}, "POST", nil, testhttp.Response(500, "Stripe-Should-Retry", "true"), false, retry.ReasonNotIdempotent},
		{"Stripe hint case and OWS", retry.Policy{}, "GET", nil, testhttp.Response(503, "Stripe-Should-Retry", " False "), false, retry.ReasonServerHint},
		{"Stripe true never retries a success", retry.Policy{}, "GET", nil, testhttp.Response(200, "Stripe-Should-Retry", "true"), false, ""},
		{"Stripe garbage ignored", retry.Policy{}, "GET", nil, testhttp.Response(503, "Stripe-Should-Retry", "maybe"), true, reasonRetryableStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := newReq(t, tt.method, tt.reqHeaders...)
			got, reason, _ := ex(tt.policy).Check(req, tt.resp, nil, 1)
			if got != tt.want || reason != tt.wantReason {
				t.Errorf("check(%s, %d) = %v, %q; want %v, %q", tt.method, tt.resp.StatusCode, got, reason, tt.want, tt.wantReason)
			}
		})
	}
}

// TestIdempotencyMarkerWithoutValue follows net/http: a nil-valued
// Idempotency-Key entry marks the request idempotent without sending it.
func TestIdempotencyMarkerWithoutValue(t *testing.T) {
	var p retry.Policy
	req := newReq(t, http.MethodPost)
	req.Header["Idempotency-Key"] = nil
	if retry, reason, _ := ex(p).Check(req, testhttp.Response(503), nil, 1); !retry {
		t.Errorf("POST with nil Idempotency-Key marker: retry = false (%s), want true", reason)
	}
}

func opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Err: err}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassifyError(t *testing.T) {
	live := context.Background()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	tests := []struct {
		name      string
		ctx       context.Context
		err       error
		wantClass errClass
	}{
		{"refused while dialling", live, opErr("dial", os.NewSyscallError("connect", syscall.ECONNREFUSED)), errNotSent},
		{"refused bare", live, syscall.ECONNREFUSED, errNotSent},
		{"dial timeout", live, opErr("dial", timeoutErr{}), errNotSent},
		{"proxy connect", live, opErr("proxyconnect", errors.New("boom")), errNotSent},
		{"reset on read", live, opErr("read", os.NewSyscallError("read", syscall.ECONNRESET)), errTransient},
		{"aborted", live, syscall.ECONNABORTED, errTransient},
		{"broken pipe", live, opErr("write", os.NewSyscallError("write", syscall.EPIPE)), errTransient},
		{"unexpected EOF", live, fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), errTransient},
		{"EOF", live, io.EOF, errTransient},
		{"closed conn", live, net.ErrClosed, errTransient},
		{"read timeout", live, opErr("read", os.ErrDeadlineExceeded), errTransient},
		{"net.Error timeout", live, timeoutErr{}, errTransient},
		{"ETIMEDOUT", live, syscall.ETIMEDOUT, errTransient},
		{"DeadlineExceeded of another context", live, context.DeadlineExceeded, errTransient},
		{"caller's deadline", expired, context.DeadlineExceeded, errFinal},
		{"caller's deadline hides a timeout", expired, timeoutErr{}, errFinal},
		{"caller cancelled", canceled, opErr("read", syscall.ECONNRESET), errFinal},
		{"Canceled with live ctx", live, fmt.Errorf("x: %w", context.Canceled), errFinal},
		{"wrapped in url.Error", live, &url.Error{Op: "Get", URL: "http://x", Err: syscall.ECONNRESET}, errTransient},
		{"certificate verification", live, &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, errFinal},
		{"unknown authority", live, x509.UnknownAuthorityError{}, errFinal},
		{"hostname", live, x509.HostnameError{Host: "x"}, errFinal},
		{"expired cert", live, x509.CertificateInvalidError{Reason: x509.Expired}, errFinal},
		{"not TLS", live, tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, errFinal},
		{"TLS alert", live, opErr("remote error", errors.New("tls: handshake failure")), errFinal},
		{"TLS error wrapping a reset", live, &tls.CertificateVerificationError{Err: syscall.ECONNRESET}, errFinal},
		{"DNS not found", live, opErr("dial", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}), errFinal},
		{"DNS timeout", live, opErr("dial", &net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}), errNotSent},
		{"DNS temporary", live, &net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}, errNotSent},
		{"unknown", live, errors.New("something odd"), errFinal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, reason := classifyError(tt.ctx, tt.err); got != tt.wantClass || reason == "" {
				t.Errorf("classifyError(%v) = %d, %q; want %d and a reason", tt.err, got, reason, tt.wantClass)
			}
		})
	}
}

// TestNetHTTPErrorClass feeds the helper the messages net/http builds (the
// same format strings) and unrelated errors.
func TestNetHTTPErrorClass(t *testing.T) {
	tests := []struct {
		err       error
		wantClass errClass
		wantOK    bool
	}{
		{fmt.Errorf("%s %q", "unsupported protocol scheme", "ftp"), errFinal, true},
		{errors.New("http: no Host in request URL"), errFinal, true},
		{errors.New("http: nil Request.URL"), errFinal, true},
		{&url.Error{Op: "Get", URL: "http://x/", Err: errors.New("stopped after 10 redirects")}, errFinal, true},
		{fmt.Errorf("http: ContentLength=%d with Body length %d", 11, 5), errFinal, true},
		{errors.New("net/http: request canceled"), errFinal, true},
		{fmt.Errorf("http2: server sent GOAWAY and closed the connection; LastStreamID=%v, ErrCode=%v, debug=%q", 1, "NO_ERROR", ""), errTransient, true},
		{errors.New("http2: Transport received Server's graceful shutdown GOAWAY"), errTransient, true},
		{errors.New("http2: client connection lost"), errTransient, true},
		{errors.New("http: server closed idle connection"), errTransient, true},
		{fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", syscall.EPIPE), errTransient, true},
		{errors.New("connection refused"), errFinal, false},
		{io.EOF, errFinal, false},
	}
	for _, tt := range tests {
		class, reason, ok := netHTTPErrorClass(tt.err)
		if class != tt.wantClass || ok != tt.wantOK || (ok && reason == "") {
			t.Errorf("netHTTPErrorClass(%q) = %d, %q, %v; want %d, %v", tt.err, class, reason, ok, tt.wantClass, tt.wantOK)
		}
	}
}

// TestCheckErrorMethods applies the method rule to transport errors
// (digitalocean/netbox-ip-controller#14): a reset after sending is retried for GET and PUT, and for POST only
// with a key or the opt-in; an error proving nothing was sent is retried
// for every method.
func TestCheckErrorMethods(t *testing.T) {
	reset := opErr("read", syscall.ECONNRESET)
	refused := opErr("dial", syscall.ECONNREFUSED)
	tests := []struct {
		name    string
		policy  retry.Policy
		method  string
		headers []string
		err     error
		want    bool
	}{
		{"GET reset", retry.Policy{}, "GET", nil, reset, true},
		{"PUT reset", retry.Policy{}, "PUT", nil, reset, true},
		{"POST reset", retry.Policy{}, "POST", nil, reset, false},
		{"PATCH reset", retry.Policy{}, "PATCH", nil, reset, false},
		{"POST reset with key", retry.Policy{}, "POST", []string{"Idempotency-Key", "k"}, reset, true},
		{"POST reset opt-in", retry.Policy{RetryNonIdempotent: true}, "POST", nil, reset, true},
		{"POST refused", retry.Policy{}, "POST", nil, refused, true},
		{"POST TLS opt-in", retry.Policy{RetryNonIdempotent: true}, "POST", nil, x509.UnknownAuthorityError{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, _ := ex(tt.policy).Check(newReq(t, tt.method, tt.headers...), nil, tt.err, 1)
			if got != tt.want {
				t.Errorf("check(%s, %v) = %v (%s), want %v", tt.method, tt.err, got, reason, tt.want)
			}
		})
	}
}

// roundTripOnce sends one request through a fresh http.Transport without
// keep-alives and returns the transport error (closing any response).
func roundTripOnce(t *testing.T, tr *http.Transport, req *http.Request) error {
	t.Helper()
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("RoundTrip(%s %s) succeeded with %s, want an error", req.Method, req.URL, resp.Status)
	}
	return err
}

// TestClassifyRealErrors classifies errors produced by a real
// http.Transport on loopback, not hand-built ones.
func TestClassifyRealErrors(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader("x"))
		err = roundTripOnce(t, &http.Transport{DisableKeepAlives: true}, req)
		var p retry.Policy
		if class, _ := classifyError(req.Context(), err); class != errNotSent {
			t.Errorf("refused: classifyError(%v) = %d, want errNotSent", err, class)
		}
		if retry, reason, _ := ex(p).Check(req, nil, err, 1); !retry {
			t.Errorf("refused POST: retry = false (%s), want true: nothing was sent", reason)
		}
	})
	t.Run("unknown certificate authority", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshake is expected
		srv.StartTLS()
		defer srv.Close()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		err := roundTripOnce(t, &http.Transport{DisableKeepAlives: true}, req)
		if class, _ := classifyError(req.Context(), err); class != errFinal {
			t.Errorf("bad cert: classifyError(%v) = %d, want errFinal", err, class)
		}
	})
	t.Run("TLS to a plain server", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		defer srv.Close()
		req, _ := http.NewRequest(http.MethodGet, strings.Replace(srv.URL, "http:", "https:", 1), nil)
		err := roundTripOnce(t, &http.Transport{DisableKeepAlives: true}, req)
		if class, _ := classifyError(req.Context(), err); class != errFinal || !isTLSError(err) {
			t.Errorf("plain server: classifyError(%v) = %d, want errFinal as a TLS error", err, class)
		}
	})
	t.Run("unsupported scheme", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, "ftp://api.test/", nil)
		err := roundTripOnce(t, &http.Transport{}, req)
		if class, reason := classifyError(req.Context(), err); class != errFinal || reason != "invalid request URL" {
			t.Errorf("ftp: classifyError(%v) = %d, %q; want errFinal, invalid request URL", err, class, reason)
		}
	})
	t.Run("too many redirects", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/again", http.StatusFound)
		}))
		defer srv.Close()
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		_, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if class, reason := classifyError(context.Background(), err); class != errFinal || reason != "too many redirects" {
			t.Errorf("redirect loop: classifyError(%v) = %d, %q; want errFinal, too many redirects", err, class, reason)
		}
	})
	t.Run("response header timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
		defer srv.Close()
		defer close(release)
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		err := roundTripOnce(t, &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: 20 * time.Millisecond}, req)
		if class, _ := classifyError(req.Context(), err); class != errTransient {
			t.Errorf("header timeout: classifyError(%v) = %d, want errTransient", err, class)
		}
	})
	t.Run("cancelled request", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		err := roundTripOnce(t, &http.Transport{DisableKeepAlives: true}, req)
		var p retry.Policy
		if retry, reason, _ := ex(p).Check(req, nil, err, 1); retry || reason != "request canceled" {
			t.Errorf("cancelled: check = %v, %q; want false, request canceled", retry, reason)
		}
	})
}

// TestServerDropsAfterReadingPOST is digitalocean/netbox-ip-controller#14 at the decision level: a
// raw TCP server reads the whole request, then resets the connection
// without replying. The POST's error is not retried (it may have been
// processed); the same failure is retried for PUT and GET, and for a POST
// with an Idempotency-Key or the opt-in.
func TestServerDropsAfterReadingPOST(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err == nil {
				_, _ = io.Copy(io.Discard, req.Body) // the full declared body
			}
			c.(*net.TCPConn).SetLinger(0) // close with RST, no reply
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-done }()

	tests := []struct {
		method  string
		headers []string
		policy  retry.Policy
		want    bool
	}{
		{http.MethodPost, nil, retry.Policy{}, false},
		{http.MethodPut, nil, retry.Policy{}, true},
		{http.MethodGet, nil, retry.Policy{}, true},
		{http.MethodPost, []string{"Idempotency-Key", "order-42"}, retry.Policy{}, true},
		{http.MethodPost, nil, retry.Policy{RetryNonIdempotent: true}, true},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, "http://"+ln.Addr().String()+"/orders", strings.NewReader("hello world"))
		for i := 0; i+1 < len(tt.headers); i += 2 {
			req.Header.Set(tt.headers[i], tt.headers[i+1])
		}
		err := roundTripOnce(t, &http.Transport{DisableKeepAlives: true}, req)
		if class, _ := classifyError(req.Context(), err); class != errTransient {
			t.Errorf("%s dropped after reading: classifyError(%v) = %d, want errTransient", tt.method, err, class)
		}
		if got, reason, _ := ex(tt.policy).Check(req, nil, err, 1); got != tt.want {
			t.Errorf("%s %v after the server dropped it (%v): retry = %v (%s), want %v", tt.method, tt.headers, err, got, reason, tt.want)
		}
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestWithIdempotencyKey(t *testing.T) {
	on := retry.Policy{AddIdempotencyKey: true}
	t.Run("POST gets a key on a clone", func(t *testing.T) {
		req := newReq(t, http.MethodPost, "Content-Type", "application/json")
		before := req.Header.Clone()
		got := ex(on).WithIdempotencyKey(req)
		if got == req {
			t.Fatal("withIdempotencyKey returned the caller's request, want a clone")
		}
		if key := got.Header.Get("Idempotency-Key"); !uuidV4.MatchString(key) {
			t.Errorf("key = %q, want a UUIDv4", key)
		}
		if !equalHeader(req.Header, before) {
			t.Errorf("caller's header changed: %v, was %v", req.Header, before)
		}
		if got.Header.Get("Content-Type") != "application/json" || got.Context() != req.Context() || got.Body != req.Body {
			t.Error("clone lost the caller's header, context or body")
		}
		if retry, _, _ := ex(on).Check(got, testhttp.Response(503), nil, 1); !retry {
			t.Error("POST with the added key is not retried on 503")
		}
	})
	t.Run("PATCH with a nil header map", func(t *testing.T) {
		req := newReq(t, http.MethodPatch)
		req.Header = nil
		if got := ex(on).WithIdempotencyKey(req); !uuidV4.MatchString(got.Header.Get("Idempotency-Key")) || req.Header != nil {
			t.Errorf("PATCH: key %q, caller header %v", got.Header.Get("Idempotency-Key"), req.Header)
		}
	})
	t.Run("custom header name", func(t *testing.T) {
		p := retry.Policy{AddIdempotencyKey: true, IdempotencyHeader: "x-request-key"}
		got := ex(p).WithIdempotencyKey(newReq(t, http.MethodPost))
		if !uuidV4.MatchString(got.Header.Get("X-Request-Key")) || got.Header.Get("Idempotency-Key") != "" {
			t.Errorf("custom header: got header %v", got.Header)
		}
	})
	for _, tc := range []struct {
		name   string
		policy retry.Policy
		req    *http.Request
	}{
		{"existing key kept", on, newReq(t, http.MethodPost, "Idempotency-Key", "mine")},
		{"GET untouched", on, newReq(t, http.MethodGet)},
		{"PUT untouched", on, newReq(t, http.MethodPut)},
		{"option off", retry.Policy{}, newReq(t, http.MethodPost)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ex(tc.policy).WithIdempotencyKey(tc.req); got != tc.req {
				t.Errorf("withIdempotencyKey cloned the request; want it unchanged")
			}
		})
	}
	seen := make(map[string]bool)
	for range 1000 {
		k := newIdempotencyKey()
		if seen[k] || !uuidV4.MatchString(k) {
			t.Fatalf("newIdempotencyKey() = %q: repeated or not a UUIDv4", k)
		}
		seen[k] = true
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

func TestRetryPolicyDecide(t *testing.T) {
	var seen retry.Check
	p := retry.Policy{Decide: func(c *retry.Check) bool {
		seen = *c
		switch {
		case c.Response != nil && c.Response.StatusCode == 501:
			return true // flip without a reason
		case c.Response != nil && c.Response.StatusCode == 503:
			c.Reason = "maintenance window"
			return false
		}
		return c.Retry
	}}
	req := newReq(t, http.MethodGet)

	if again, reason, _ := ex(p).Check(req, testhttp.Response(501), nil, 2); !again || reason != retry.ReasonDecided {
		t.Errorf("Decide flipping 501: %v, %q; want true, %q", again, reason, retry.ReasonDecided)
	}
	if seen.Attempt != 2 || seen.Retry || seen.Reason != reasonFinalStatus || seen.Request != req {
		t.Errorf("Decide saw %+v; want attempt 2, default false, reason %q", seen, reasonFinalStatus)
	}
	if again, reason, _ := ex(p).Check(req, testhttp.Response(503), nil, 1); again || reason != "maintenance window" {
		t.Errorf("Decide vetoing 503: %v, %q; want false, maintenance window", again, reason)
	}
	err := opErr("read", syscall.ECONNRESET)
	if again, reason, _ := ex(p).Check(req, nil, err, 3); !again || reason != "connection reset" || seen.Err != err || seen.Response != nil {
		t.Errorf("Decide keeping the default for an error: %v, %q; saw %+v", again, reason, seen)
	}
}

func BenchmarkRetryCheckSuccess(b *testing.B) {
	p := &Executor{}
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	resp := testhttp.Response(200, "Content-Type", "application/json")
	b.ReportAllocs()
	for b.Loop() {
		p.Check(req, resp, nil, 1)
	}
}

// ex is the executor of p, without a server delay reader.
func ex(p retry.Policy) *Executor { return &Executor{Policy: p} }
