package pace

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quotaServer is a fake API with a quota of n requests per fixed window of
// per, aligned to the clock's epoch, that reports its standing on every
// answer in one family of quota headers and answers 429 with Retry-After
// beyond the quota. It counts what it admitted and refused.
type quotaServer struct {
	n      int
	per    time.Duration
	family string // "x-ratelimit", "ietf", "openai", "anthropic"
	floor  bool   // whole seconds (t, Retry-After, a delta reset) rounded down, not up

	mu          sync.Mutex
	window      int64
	used        int
	ok, tooMany int
	last        time.Time
}

func (s *quotaServer) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.last = now
	w := now.UnixNano() / int64(s.per)
	if w != s.window {
		s.window, s.used = w, 0
	}
	end := time.Unix(0, (w+1)*int64(s.per))
	if s.used >= s.n {
		s.tooMany++
		return testhttp.Response(http.StatusTooManyRequests, "Retry-After", strconv.FormatInt(s.secs(end.Sub(now)), 10)), nil
	}
	s.used++
	s.ok++
	left := s.n - s.used
	resp := testhttp.Response(http.StatusOK)
	h := resp.Header
	switch s.family {
	case "x-ratelimit":
		// Delta seconds: a synctest bubble's clock starts in 2000, before
		// the epoch values parseResetValue takes for instants (2001-09-09
		// on); TestServerQuota reads GitHub's epoch form.
		h.Set("X-RateLimit-Limit", strconv.Itoa(s.n))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(left))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(s.secs(end.Sub(now)), 10))
	case "ietf":
		t := s.secs(end.Sub(now))
		h.Set("RateLimit-Policy", fmt.Sprintf(`"window";q=%d;w=%d`, s.n, int64(s.per/time.Second)))
		h.Set("RateLimit", fmt.Sprintf(`"window";r=%d;t=%d`, left, t))
	case "openai":
		h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(s.n))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(left))
		h.Set("X-Ratelimit-Reset-Requests", end.Sub(now).String())
	case "anthropic":
		h.Set("Anthropic-Ratelimit-Requests-Limit", strconv.Itoa(s.n))
		h.Set("Anthropic-Ratelimit-Requests-Remaining", strconv.Itoa(left))
		h.Set("Anthropic-Ratelimit-Requests-Reset", end.UTC().Format(time.RFC3339Nano))
	}
	return resp, nil
}

// secs returns d in whole seconds, rounded as s rounds them.
func (s *quotaServer) secs(d time.Duration) int64 {
	if s.floor {
		return int64(math.Floor(d.Seconds()))
	}
	return int64(math.Ceil(d.Seconds()))
}

// TestTransportPacesFromQuotaHeaders is the scenario of proactive pacing: a
// server with a quota of 100 requests per 60 s window that reports it, a
// client with no configured limit making 300 calls from 4 goroutines. The
// Transport spreads what remains over the time to the reset, so the key
// never runs dry: no 429, and all 300 done within three windows and a
// second. Each common family of quota headers drives it alike.
func TestTransportPacesFromQuotaHeaders(t *testing.T) {
	for _, family := range []string{"x-ratelimit", "ietf", "openai", "anthropic"} {
		t.Run(family, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &quotaServer{n: 100, per: time.Minute, family: family}
				tr := &Transport{Base: srv}
				start := time.Now()
				var wg sync.WaitGroup
				calls := make(chan int, 300)
				for i := range 300 {
					calls <- i
				}
				close(calls)
				for range 4 {
					wg.Go(func() {
						for range calls {
							req, _ := http.NewRequest("GET", "http://api.test/v1", nil)
							resp, err := tr.RoundTrip(req)
							if assert.NoError(t, err) {
								assert.Equal(t, http.StatusOK, resp.StatusCode)
							}
						}
					})
				}
				wg.Wait()
				assert.Equal(t, 0, srv.tooMany, "429 answers")
				assert.Equal(t, 300, srv.ok)
				took := srv.last.Sub(start)
				assert.LessOrEqual(t, took, 3*time.Minute+time.Second)
				t.Logf("%s: 300 calls, %d × 429, last call at %v", family, srv.tooMany, took)
			})
		})
	}
}

// TestTransportQuotaNeverFasterThanLimit: quota headers that would allow
// more than the configured limit do not raise the pace (the limit holds),
// and headers that allow less slow it down.
func TestTransportQuotaNeverFasterThanLimit(t *testing.T) {
	for _, tt := range []struct {
		name     string
		left     string // X-RateLimit-Remaining on every answer
		reset    string // X-RateLimit-Reset, delta seconds
		wantGaps time.Duration
	}{
		{"hint faster than the limit", "1000", "1", time.Second},  // 1 ms apart by the hint, 1 s by the limit
		{"hint slower than the limit", "1", "4", 2 * time.Second}, // 4 s/(1+1)
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
					return testhttp.Response(http.StatusOK, "X-RateLimit-Remaining", tt.left, "X-RateLimit-Reset", tt.reset), nil
				}}
				tr := &Transport{Base: srv, Limits: Hosts{"*": {Limit: LeakyBucket(PerSecond(1), LeakyOptions{Queue: 10})}}}
				for range 5 {
					req, _ := http.NewRequest("GET", "http://api.test/", nil)
					resp, err := tr.RoundTrip(req)
					require.NoError(t, err)
					resp.Body.Close()
				}
				for i, g := range gaps(srv.Requests()) {
					assert.GreaterOrEqual(t, g, tt.wantGaps, "gap %d", i)
				}
			})
		})
	}
}

// TestKeyedQuotaRules checks, through Settle and Wait, how a key learns
// its pace from quota answers: the remainder spread over the reset, a spent
// quota pausing the key until the reset, old news (a reset that jumps
// backwards, a count that grows in the same window) ignored, another bucket
// taken only when slower, and the pace over once its window has ended.
func TestKeyedQuotaRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := NewKeyed(Limit{}, KeyedOptions{})
		require.NoError(t, err)
		ctx := context.Background()
		settle := func(left int, reset time.Duration, bucket string) {
			k.settle(&throttle.Permit{Key: "a"}, throttle.Outcome{Sent: true, Response: true, Quota: throttle.Quota{Remaining: left, Reset: reset, Bucket: bucket}})
		}
		pace := func() quotaPace {
			e := k.open(0, "a", false)
			defer e.close(false)
			if e.st == nil {
				return quotaPace{}
			}
			return e.st.th.pace
		}
		t0 := time.Now()
		settle(9, 10*time.Second, "")
		assert.Equal(t, int64(time.Second), pace().interval, "10 s/(9+1)")
		// The next requests wait out the interval, one after the other.
		for i := 1; i <= 2; i++ {
			p, err := k.Wait(ctx, "a", 0)
			require.NoError(t, err)
			assert.Equal(t, time.Duration(i)*time.Second, time.Since(t0))
			k.Settle(p, throttle.Outcome{Sent: true, Response: true})
		}
		// t0+2s. An overtaken answer (more left in the same window) and a
		// reset that jumps backwards are ignored.
		settle(7, 8*time.Second, "")
		before := pace()
		settle(8, 8*time.Second, "")
		assert.Equal(t, before, pace(), "overtaken answer ignored")
		settle(5, 3*time.Second, "")
		assert.Equal(t, before, pace(), "reset jumping backwards ignored")
		// Another bucket: only a slower pace replaces it.
		settle(50, 5*time.Second, "other")
		assert.Equal(t, before, pace(), "faster bucket ignored")
		settle(1, 5*time.Second, "other")
		assert.Equal(t, "other", pace().bucket)
		assert.Equal(t, int64(2500*time.Millisecond), pace().interval, "5 s/(1+1)")
		// A spent quota pauses the key until the reset; the pace is over.
		settle(0, 7*time.Second, "other")
		assert.Zero(t, pace().interval)
		start := time.Now()
		p, err := k.Wait(ctx, "a", 0)
		require.NoError(t, err)
		assert.Equal(t, 7*time.Second, time.Since(start))
		assert.False(t, p.Probe, "a spent quota is a pause, not a throttle: no probe")
		k.Settle(p, throttle.Outcome{Sent: true, Response: true})
		// A pace beyond maxWait is refused at once, booking nothing.
		settle(1, time.Minute, "")
		_, err = k.Wait(ctx, "a", time.Second)
		assert.ErrorIs(t, err, ErrWaitTooLong)
		// Once the window has ended the key is free and forgettable.
		time.Sleep(time.Minute)
		p, err = k.Wait(ctx, "a", 0)
		require.NoError(t, err)
		assert.Zero(t, p.Delay)
		k.Settle(p, throttle.Outcome{Sent: true, Response: true})
		k.sweepAt(time.Now())
		assert.Equal(t, 0, k.Len())
	})
}

// TestTransportQuotaBounded: a server cannot make the client wait without
// bound through its quota headers. A spent quota that resets in an hour
// pauses the key for MaxRetryAfter, not an hour; negative or contradictory
// values pace nothing.
func TestTransportQuotaBounded(t *testing.T) {
	for _, tt := range []struct {
		name     string
		kv       []string
		wantGaps time.Duration
	}{
		{"spent for an hour", []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "3600"}, 10 * time.Second},
		{"negative", []string{"X-RateLimit-Remaining", "-5", "X-RateLimit-Reset", "-3600"}, 0},
		{"contradictory", []string{"X-RateLimit-Limit", "1", "X-RateLimit-Remaining", "5", "X-RateLimit-Reset", "3600"}, 0},
		{"garbage", []string{"RateLimit", `"a";r=0;t=`, "X-Ratelimit-Reset-Requests", "soon", "X-Ratelimit-Remaining-Requests", "0"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
					return testhttp.Response(http.StatusOK, tt.kv...), nil
				}}
				tr := &Transport{Base: srv, MaxRetryAfter: 10 * time.Second}
				for range 3 {
					req, _ := http.NewRequest("GET", "http://api.test/", nil)
					resp, err := tr.RoundTrip(req)
					require.NoError(t, err)
					resp.Body.Close()
				}
				assert.Equal(t, []time.Duration{tt.wantGaps, tt.wantGaps}, gaps(srv.Requests()))
			})
		})
	}
}
