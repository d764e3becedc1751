package batch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/internal/retryrule"
	"github.com/pacehttp/pace/internal/testhttp"
)

// fakeAPI answers by path, and remembers every body it handed out.
type fakeAPI struct {
	mu     sync.Mutex
	seen   map[string]int
	bodies []*testhttp.Body
	sends  map[string][]time.Time
}

var errConnRefused = errors.New("connection refused")

func (f *fakeAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := req.URL.Path
	f.seen[p]++
	f.sends[p] = append(f.sends[p], time.Now())
	code, body, h := http.StatusOK, "hello", http.Header{}
	switch {
	case p == "/fail":
		code, body = http.StatusInternalServerError, strings.Repeat("x", 10<<10)
	case p == "/throttle" && f.seen[p] == 1:
		code = http.StatusTooManyRequests
		h.Set("Retry-After", "2")
	case p == "/busy" && f.seen[p] == 1:
		code = http.StatusServiceUnavailable
		h.Set("Retry-After", "3")
	case p == "/down":
		code = http.StatusServiceUnavailable
	case p == "/refused":
		return nil, errConnRefused
	}
	b := testhttp.NewBody(body)
	f.bodies = append(f.bodies, b)
	return &http.Response{StatusCode: code, Header: h, Body: b, Request: req}, nil
}

func TestHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{seen: map[string]int{}, sends: map[string][]time.Time{}}
		client := &http.Client{Transport: api}
		build := func(ctx context.Context, path string) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test"+path, nil)
		}
		paths := []string{"/ok", "/fail", "/throttle", "/busy", "/down", "/refused"}
		rep, _ := Run(t.Context(), paths, HTTP(client, build, nil), Options{Concurrency: 1})
		tests := []struct {
			outcome  Outcome
			status   int
			attempts int
			err      any // a target for errors.As or errors.Is
		}{
			{Succeeded, 200, 1, nil},
			{Failed, 500, 1 + DefaultMaxRequeues, new(*StatusError)}, // a GET: requeued, then failed
			{Succeeded, 200, 2, nil},
			{Succeeded, 200, 2, nil},
			{Failed, 503, 1 + DefaultMaxRequeues, new(*StatusError)},
			{Failed, 0, 1, errConnRefused}, // not a pace.Transport's give-up: not requeued
		}
		for i, tt := range tests {
			res := rep.Results[i]
			if res.Outcome != tt.outcome || res.Status != tt.status || res.Attempts != tt.attempts {
				t.Errorf("%s: %v status %d after %d attempts, want %v %d after %d",
					paths[i], res.Outcome, res.Status, res.Attempts, tt.outcome, tt.status, tt.attempts)
			}
			switch target := tt.err.(type) {
			case nil:
				if res.Err != nil {
					t.Errorf("%s: Err = %v, want nil", paths[i], res.Err)
				}
			case error:
				if !errors.Is(res.Err, target) {
					t.Errorf("%s: Err = %v, want %v", paths[i], res.Err, target)
				}
			default:
				if !errors.As(res.Err, target) {
					t.Errorf("%s: Err = %v (%T), want %T", paths[i], res.Err, res.Err, target)
				}
			}
		}
		for name, wait := range map[string]time.Duration{"/throttle": 2 * time.Second, "/busy": 3 * time.Second} {
			if s := api.sends[name]; len(s) != 2 || s[1].Sub(s[0]) != wait {
				t.Errorf("%s retried after %v, want %v (Retry-After)", name, s[1].Sub(s[0]), wait)
			}
		}
		if s := rep.Summary; s.Throttled != 2 || s.Pauses != 2 {
			t.Errorf("Summary = %v, want 2 throttled, 2 pauses", s)
		}
		for i, b := range api.bodies {
			if !b.Closed() || b.BytesRead() > retryrule.DrainMax+len("hello") {
				t.Errorf("body %d: closed %v after reading %d bytes; want closed, at most retryrule.DrainMax drained", i, b.Closed(), b.BytesRead())
			}
		}
	})
}

func TestHTTPBuildErrors(t *testing.T) {
	errBuild := errors.New("no such item")
	build := func(ctx context.Context, i int) (*http.Request, error) {
		if i == 0 {
			return nil, errBuild
		}
		return nil, nil
	}
	sent := false
	client := &http.Client{Transport: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		sent = true
		return nil, errConnRefused
	})}
	rep, _ := Run(context.Background(), ints(2), HTTP(client, build, nil), Options{})
	if !errors.Is(rep.Results[0].Err, errBuild) || !errors.Is(rep.Results[1].Err, errNilRequest) || sent {
		t.Errorf("errors %v, %v, sent %v; want the build error, errNilRequest, nothing sent",
			rep.Results[0].Err, rep.Results[1].Err, sent)
	}
}

func TestHTTPCustomCheck(t *testing.T) {
	api := &fakeAPI{seen: map[string]int{}, sends: map[string][]time.Time{}}
	errBody := errors.New("unexpected body")
	check := func(resp *http.Response) error {
		if err := CheckResponse(resp); err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "hello" {
			return errBody
		}
		return nil
	}
	build := func(ctx context.Context, path string) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test"+path, nil)
	}
	rep, err := Run(context.Background(), []string{"/ok", "/ok"}, HTTP(&http.Client{Transport: api}, build, check), Options{})
	if err != nil || rep.Results[0].Status != 200 {
		t.Errorf("Run = %v, %v", rep.Results, err)
	}
	for _, b := range api.bodies {
		if !b.Closed() {
			t.Error("body not closed after a check that read it")
		}
	}
}

func TestCheckResponse(t *testing.T) {
	synctest.Test(t, testCheckResponse) // the clock is on a whole second, so an HTTP-date names it exactly
}

func testCheckResponse(t *testing.T) {
	now := time.Now().UTC()
	date, in30s := now.Format(http.TimeFormat), now.Add(30*time.Second).Format(http.TimeFormat)
	tests := []struct {
		code       int
		header     map[string]string
		throttled  bool
		retryAfter time.Duration
		statusErr  bool
	}{
		{200, nil, false, 0, false},
		{204, nil, false, 0, false},
		{299, nil, false, 0, false},
		{304, nil, false, 0, true},
		{404, nil, false, 0, true},
		{429, nil, true, 0, false},
		{429, map[string]string{"Retry-After": "7"}, true, 7 * time.Second, false},
		{429, map[string]string{"Retry-After": "soon"}, true, 0, false},
		{429, map[string]string{"Date": date, "Retry-After": in30s}, true, 30 * time.Second, false},
		{503, nil, false, 0, true},
		{503, map[string]string{"Retry-After": "2"}, true, 2 * time.Second, false},
		{503, map[string]string{"Retry-After": "-2"}, false, 0, true},
		{503, map[string]string{"Retry-After-Ms": "1500"}, true, 1500 * time.Millisecond, false},
		{429, map[string]string{"X-Ratelimit-Reset": "60"}, true, time.Minute, false},
		{200, map[string]string{"Retry-After": "5"}, false, 0, false},
		// GitHub's rate limits (docs.github.com, "Rate limits for the REST API").
		{403, map[string]string{"Retry-After": "60"}, true, time.Minute, false},
		{403, map[string]string{"X-Ratelimit-Remaining": "4999", "X-Ratelimit-Reset": "60"}, false, 0, true},
		{403, nil, false, 0, true},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		err := CheckResponse(&http.Response{StatusCode: tt.code, Header: h})
		d, kind := throttleOf(err, time.Now())
		throttled := kind == serverThrottle
		var se *StatusError
		if throttled != tt.throttled || d != tt.retryAfter || errors.As(err, &se) != tt.statusErr || statusOf(err) != tt.code && err != nil {
			t.Errorf("CheckResponse(%d, %v) = %v; want throttled %v after %v, status error %v",
				tt.code, tt.header, err, tt.throttled, tt.retryAfter, tt.statusErr)
		}
	}
}

func TestRecordStatusOutsideRun(t *testing.T) {
	RecordStatus(context.Background(), 200) // no attempt: nothing happens, no panic
}
