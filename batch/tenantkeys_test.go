package batch

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/retryrule"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tenants is a server of one host whose callers each have an API key
// (X-Api-Key): item i goes out under key-(i%10). Key A (key-0) is answered
// 429 with Retry-After: 60 until recoverAt (never, when zero); the others
// get 200. Each answer takes 5 ms.
type tenants struct {
	start     time.Time
	recoverAt time.Duration

	mu     sync.Mutex
	sentA  []time.Duration       // when key A's requests arrived
	doneAt map[int]time.Duration // when each item's 200 was sent
}

func newTenants(recoverAt time.Duration) *tenants {
	return &tenants{start: time.Now(), recoverAt: recoverAt, doneAt: map[int]time.Duration{}}
}

func (s *tenants) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(5 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Since(s.start)
	if r.Header.Get("X-Api-Key") == "key-0" {
		s.sentA = append(s.sentA, now)
		if s.recoverAt == 0 || now < s.recoverAt {
			return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "60"), nil
		}
	}
	var i int
	_, _ = fmt.Sscanf(r.URL.Path, "/items/%d", &i)
	s.doneAt[i] = now
	return testhttp.Response(http.StatusOK), nil
}

// run sends 100 items through a pace.Transport keyed by X-Api-Key and
// paced at 20 a second per key, set changing its defaults.
func (s *tenants) run(ctx context.Context, set func(*pace.Transport)) (*Report, error) {
	tr := &pace.Transport{}
	set(tr)
	tr.Limits = pace.Hosts{"api.test": {Limit: pace.TokenBucket(pace.PerSecond(20), 1)}}
	tr.Key = func(r *http.Request) string { return r.Header.Get("X-Api-Key") }
	tr.Base = s
	build := func(ctx context.Context, i int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://api.test/items/%d", i), nil)
		if err == nil {
			req.Header.Set("X-Api-Key", fmt.Sprintf("key-%d", i%10))
		}
		return req, err
	}
	return Run(ctx, ints(100), HTTP(&http.Client{Transport: tr}, build, nil), Options{})
}

// othersDone returns how many items of keys other than A succeeded, and
// when the last of them was answered.
func (s *tenants) othersDone(rep *Report) (n int, last time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, res := range rep.Results {
		if i%10 != 0 && res.Outcome == Succeeded {
			n++
			last = max(last, s.doneAt[i])
		}
	}
	return n, last
}

// TestOneKeyOutOfQuotaOthersGoOn: 100 items over 10 API keys of one host,
// key A always throttled with Retry-After: 60. The other nine keys' 90
// items (half a second of work at 20 a second per key) must all be done
// within 2 s: A's throttle pauses A alone, and A's items wait in Run's
// line, not in the Concurrency slots. The run is cancelled after 10 s, so
// A's items end: Interrupted if sent, NotStarted if its pause held them
// back each time; with a 10 s deadline instead they end at once, since the
// pause outlasts it.
func TestOneKeyOutOfQuotaOthersGoOn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		set      func(*pace.Transport)
		deadline bool
	}{
		{"defaults", func(*pace.Transport) {}, false},
		{"MaxWait 1s", func(t *pace.Transport) { t.MaxWait = time.Second }, false},
		{"MaxAttempts 1", func(t *pace.Transport) { t.Retry = retry.Policy{MaxAttempts: 1} }, false},
		{"ErrorOnGiveUp", func(t *pace.Transport) { t.ErrorOnGiveUp = true }, false},
		{"deadline", func(*pace.Transport) {}, true},
		{"deadline, MaxWait 1s", func(t *pace.Transport) { t.MaxWait = time.Second }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newTenants(0)
				ctx, cancel := context.WithCancel(t.Context())
				if tc.deadline {
					ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
				}
				defer cancel()
				time.AfterFunc(10*time.Second, cancel)
				rep, err := srv.run(ctx, tc.set)
				require.Error(t, err) // A's items did not succeed

				n, last := srv.othersDone(rep)
				assert.Equal(t, 90, n, "the other keys' items done; %v", rep.Summary)
				assert.LessOrEqual(t, last, 2*time.Second, "the other keys' last item")
				notStarted := 0
				for i := 0; i < 100; i += 10 {
					want := Interrupted // sent, throttled
					if rep.Results[i].Attempts == 0 {
						want, notStarted = NotStarted, notStarted+1 // held back by A's pause, never sent
					}
					assert.Equal(t, want, rep.Results[i].Outcome, "item %d of key A", i)
				}
				assert.GreaterOrEqual(t, notStarted, 7, "A's items never sent")
				if tc.deadline {
					assert.LessOrEqual(t, rep.Summary.Elapsed, 2*time.Second, "the run")
				}
				// A's first answer pauses it: its later items wait for the
				// pause in Run's line, nothing sent.
				assert.LessOrEqual(t, len(srv.sentA), 3, "requests of key A")
			})
		})
	}
}

// TestOneKeyOutOfQuotaWaitsOutItsPause: the same run, key A recovering
// after its 60 s pause, and no end to the run. The other keys are done
// within 2 s; A's items wait out the pause in Run's line, nothing sent,
// and are then all done.
func TestOneKeyOutOfQuotaWaitsOutItsPause(t *testing.T) {
	for name, set := range map[string]func(*pace.Transport){
		"defaults":   func(*pace.Transport) {},
		"MaxWait 1s": func(t *pace.Transport) { t.MaxWait = time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newTenants(60 * time.Second)
				rep, err := srv.run(t.Context(), set)
				require.NoError(t, err)
				assert.Equal(t, 100, rep.Summary.Succeeded)

				n, last := srv.othersDone(rep)
				assert.Equal(t, 90, n)
				assert.LessOrEqual(t, last, 2*time.Second, "the other keys' last item")
				srv.mu.Lock()
				defer srv.mu.Unlock()
				require.NotEmpty(t, srv.sentA)
				for _, at := range srv.sentA[1:] {
					assert.GreaterOrEqual(t, at, 60*time.Second, "a request of key A during its pause")
				}
				assert.Len(t, srv.sentA, 11, "the throttled request, then one per item of A")
			})
		})
	}
}

// TestHTTPHandsBackOnlyToItsOwnTransport: HTTP asks the client's
// pace.Transport to hand its throttles back (retryrule.WithHandBack) only when it
// keys the run by that Transport's keys: not through a wrapper, where it
// sees only the host, lest one key's throttle pause the whole host.
func TestHTTPHandsBackOnlyToItsOwnTransport(t *testing.T) {
	var marked []bool
	base := testhttp.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
		_, hb := retryrule.HandBack(r.Context())
		marked = append(marked, hb)
		return testhttp.Response(http.StatusOK), nil
	})
	key := func(r *http.Request) string { return r.Header.Get("X-Api-Key") }
	direct := &pace.Transport{Base: base, Key: key}
	wrapped := testhttp.RoundTripperFunc(direct.RoundTrip)
	build := func(ctx context.Context, _ int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
	}
	for _, rt := range []http.RoundTripper{direct, wrapped} {
		_, err := Run(t.Context(), ints(1), HTTP(&http.Client{Transport: rt}, build, nil), Options{})
		require.NoError(t, err)
	}
	assert.Equal(t, []bool{true, false}, marked)
}
