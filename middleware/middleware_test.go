package middleware

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
)

// newTest returns a Middleware for o and fails the test on an error.
func newTest(tb testing.TB, o Options) *Middleware {
	tb.Helper()
	m, err := New(o)
	if err != nil {
		tb.Fatalf("New(%+v): %v", o, err)
	}
	return m
}

// okHandler answers 200 and counts the requests it receives.
type okHandler struct{ n int }

func (h *okHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.n++
	w.WriteHeader(http.StatusOK)
}

// serve sends req through h and returns the recorded response.
func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// headerStep is one request of a header test: the fake time to let pass
// before it, and what its response must show.
type headerStep struct {
	sleep      time.Duration
	status     int
	rateLimit  string // the RateLimit field
	retryAfter string // the Retry-After field; "" when admitted
}

// TestHeaders sends requests from one client through each kind of limit on
// fake time and checks status, Retry-After, RateLimit and RateLimit-Policy
// exactly, then checks the fields against the limiter's state
// (checkAgainstQuota).
func TestHeaders(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name   string
		limit  pace.Limit
		policy string
		steps  []headerStep
	}{
		{"token bucket 10/s burst 5", pace.TokenBucket(pace.PerSecond(10), 5), `"default";q=10;w=1`, []headerStep{
			{0, 200, `"default";r=4;t=1`, ""},
			{0, 200, `"default";r=3;t=1`, ""},
			{0, 200, `"default";r=2;t=1`, ""},
			{0, 200, `"default";r=1;t=1`, ""},
			{0, 200, `"default";r=0;t=1`, ""},
			{0, 429, `"default";r=0;t=1`, "1"},
			{100 * time.Millisecond, 200, `"default";r=0;t=1`, ""},
			{250 * time.Millisecond, 200, `"default";r=1;t=1`, ""},
			{10 * s, 200, `"default";r=4;t=1`, ""},
		}},
		{"leaky 2/s, nginx rate=2r/s", pace.LeakyBucket(pace.PerSecond(2), pace.LeakyOptions{}), `"default";q=2;w=1`, []headerStep{
			{0, 200, `"default";r=0;t=1`, ""},
			{0, 429, `"default";r=0;t=1`, "1"},
			{499 * time.Millisecond, 429, `"default";r=0;t=1`, "1"},
			{time.Millisecond, 200, `"default";r=0;t=1`, ""},
		}},
		{"leaky 1/s slack 2, nginx burst=2 nodelay", pace.LeakyBucket(pace.PerSecond(1), pace.LeakyOptions{Slack: 2}), `"default";q=3;w=3`, []headerStep{
			{0, 200, `"default";r=2;t=1`, ""},
			{0, 200, `"default";r=1;t=2`, ""},
			{0, 200, `"default";r=0;t=1`, ""},
			{0, 429, `"default";r=0;t=1`, "1"},
			{2500 * time.Millisecond, 200, `"default";r=1;t=2`, ""},
		}},
		{"fixed window 3/min", pace.FixedWindow(pace.PerMinute(3)), `"default";q=3;w=60`, []headerStep{
			{0, 200, `"default";r=2;t=60`, ""},
			{0, 200, `"default";r=1;t=60`, ""},
			{30 * s, 200, `"default";r=0;t=30`, ""},
			{0, 429, `"default";r=0;t=30`, "30"},
			{29500 * time.Millisecond, 429, `"default";r=0;t=1`, "1"},
			{500 * time.Millisecond, 200, `"default";r=2;t=60`, ""},
		}},
		{"sliding log 3 per 10s", pace.SlidingLog(pace.Rate{N: 3, Per: 10 * s}), `"default";q=3;w=10`, []headerStep{
			{0, 200, `"default";r=2;t=10`, ""},
			{4 * s, 200, `"default";r=1;t=10`, ""},
			{4 * s, 200, `"default";r=0;t=2`, ""},
			{0, 429, `"default";r=0;t=2`, "2"},
			{1500 * time.Millisecond, 429, `"default";r=0;t=1`, "1"},
			{500 * time.Millisecond, 200, `"default";r=0;t=4`, ""},
		}},
		{"sliding counter 4/min", pace.SlidingCounter(pace.PerMinute(4)), `"default";q=4;w=60`, []headerStep{
			{0, 200, `"default";r=3;t=120`, ""},
			{0, 200, `"default";r=2;t=120`, ""},
			{0, 200, `"default";r=1;t=120`, ""},
			{0, 200, `"default";r=0;t=75`, ""},
			{0, 429, `"default";r=0;t=75`, "75"},
			{75 * s, 200, `"default";r=0;t=15`, ""},
		}},
		{"all of 10/s burst 5 and 7/min", pace.All(pace.TokenBucket(pace.PerSecond(10), 5), pace.FixedWindow(pace.PerMinute(7))),
			`"default-1";q=10;w=1, "default-2";q=7;w=60`, []headerStep{
				{0, 200, `"default-1";r=4;t=1, "default-2";r=6;t=60`, ""},
				{0, 200, `"default-1";r=3;t=1, "default-2";r=5;t=60`, ""},
				{0, 200, `"default-1";r=2;t=1, "default-2";r=4;t=60`, ""},
				{0, 200, `"default-1";r=1;t=1, "default-2";r=3;t=60`, ""},
				{0, 200, `"default-1";r=0;t=1, "default-2";r=2;t=60`, ""},
				{0, 429, `"default-1";r=0;t=1, "default-2";r=2;t=1`, "1"}, // no t beyond Retry-After
				{s, 200, `"default-1";r=4;t=1, "default-2";r=1;t=59`, ""},
				{0, 200, `"default-1";r=3;t=1, "default-2";r=0;t=59`, ""},
				{0, 429, `"default-1";r=3;t=1, "default-2";r=0;t=59`, "59"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newTest(t, Options{Limit: tt.limit})
				next := &okHandler{}
				h := m.Handler(next)
				admitted := 0
				for i, st := range tt.steps {
					time.Sleep(st.sleep)
					rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
					if rec.Code == http.StatusOK {
						admitted++
					}
					got := [...]string{strconv.Itoa(rec.Code), rec.Header().Get("RateLimit"), rec.Header().Get("Retry-After"), rec.Header().Get("RateLimit-Policy")}
					want := [...]string{strconv.Itoa(st.status), st.rateLimit, st.retryAfter, tt.policy}
					if got != want {
						t.Errorf("request %d: status, RateLimit, Retry-After, RateLimit-Policy = %q, want %q", i, got, want)
					}
					checkAgainstQuota(t, m, "a192.0.2.1", rec)
				}
				if next.n != admitted {
					t.Errorf("next received %d requests, want the %d admitted", next.n, admitted)
				}
			})
		})
	}
}

// rateLimitItem matches one item of a RateLimit field as the middleware
// writes it.
var rateLimitItem = regexp.MustCompile(`^"([ !#-\[\]-~]|\\["\\])*";r=(\d{1,15});t=(\d{1,15})$`)

// policyItem matches one item of a RateLimit-Policy field: q is a
// non-negative Integer, w a positive one (draft §3.1).
var policyItem = regexp.MustCompile(`^"([ !#-\[\]-~]|\\["\\])*";q=\d{1,15};w=[1-9]\d{0,14}$`)

// checkAgainstQuota checks the RateLimit and Retry-After fields of rec
// against key's Quota, read from the limiter at the same (fake) instant: r
// is Remaining, t is Reset (or Wait when r is 0) rounded up to whole
// seconds, and Retry-After is Wait rounded up, which no t exceeds.
func checkAgainstQuota(t *testing.T, m *Middleware, key string, rec *httptest.ResponseRecorder) {
	t.Helper()
	q := m.keyed.QuotaAt(time.Now(), key)
	parts := []pace.Quota{q}
	if len(q.Parts) > 1 {
		parts = q.Parts
	}
	maxT := int64(math.MaxInt64)
	if rec.Code == http.StatusTooManyRequests {
		maxT = max(ceilSeconds(q.Wait), 1)
	}
	items := splitList(rec.Header().Get("RateLimit"))
	if len(items) != len(parts) {
		t.Fatalf("RateLimit %q has %d items, want %d", rec.Header().Get("RateLimit"), len(items), len(parts))
	}
	for _, item := range splitList(rec.Header().Get("RateLimit-Policy")) {
		if !policyItem.MatchString(item) {
			t.Errorf("RateLimit-Policy item %q is malformed", item)
		}
	}
	for i, p := range parts {
		sm := rateLimitItem.FindStringSubmatch(items[i])
		if sm == nil {
			t.Fatalf("RateLimit item %q is malformed", items[i])
		}
		wantT := p.Reset
		if p.Remaining == 0 {
			wantT = p.Wait
		}
		if want := fmt.Sprintf("r=%d t=%d", p.Remaining, min(ceilSeconds(wantT), maxT)); "r="+sm[2]+" t="+sm[3] != want {
			t.Errorf("RateLimit item %d = %q, want %s from the limiter's %+v", i, items[i], want, p)
		}
	}
	if rec.Code == http.StatusTooManyRequests {
		if want := strconv.FormatInt(max(ceilSeconds(q.Wait), 1), 10); rec.Header().Get("Retry-After") != want {
			t.Errorf("Retry-After = %q, want %s from the limiter's Wait %v", rec.Header().Get("Retry-After"), want, q.Wait)
		}
	}
}

// ceilSeconds rounds d up to whole seconds, the test's own way.
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d > time.Duration(s)*time.Second {
		s++
	}
	return s
}

// splitList splits a field value at ", ".
func splitList(v string) []string {
	return strings.Split(v, ", ")
}

// TestHeadersPerClient checks that each client address has its own limit.
func TestHeadersPerClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newTest(t, Options{Limit: pace.FixedWindow(pace.PerMinute(1))}).Handler(&okHandler{})
		for _, addr := range []string{"192.0.2.1:1", "192.0.2.2:1", "[2001:db8::1]:1"} {
			for i, want := range []int{200, 429} {
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.RemoteAddr = addr
				if rec := serve(h, req); rec.Code != want {
					t.Errorf("request %d from %s: status %d, want %d", i, addr, rec.Code, want)
				}
			}
		}
	})
}
