package pace

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// limitsForRetune are the limits the SetLimitAt tests change between.
func limitsForRetune() map[string]Limit {
	return map[string]Limit{
		"token bucket": TokenBucket(PerSecond(10), 5),
		"pacer":        LeakyBucket(PerSecond(10), LeakyOptions{Slack: 2, Queue: 4}),
		"fixed window": FixedWindow(PerSecond(10)),
		"sliding log":  SlidingLog(PerSecond(10)),
		"sliding est.": SlidingCounter(PerSecond(10)),
		"all":          All(TokenBucket(PerSecond(10), 5), SlidingLog(PerMinute(100))),
	}
}

// TestShaperSetLimitSameLimitKeepsState: changing a Shaper's limit to the
// same limit at random instants of a random schedule admits exactly what
// the unchanged Shaper admits, for every algorithm: nothing of its state
// is lost.
func TestShaperSetLimitSameLimitKeepsState(t *testing.T) {
	for name, l := range limitsForRetune() {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			a, err := NewShaper(l)
			require.NoError(t, err)
			b, err := NewShaper(l)
			require.NoError(t, err)
			start := time.Unix(1_700_000_000, 0)
			nA, nB := 0, 0
			for i := range 5000 {
				now := start.Add(time.Duration(i) * 7 * time.Millisecond)
				if rng.IntN(50) == 0 {
					require.NoError(t, b.SetLimitAt(now, l))
				}
				okA, okB := a.AllowAt(now, 1), b.AllowAt(now, 1)
				if okA {
					nA++
				}
				if okB {
					nB++
				}
				require.Equal(t, okA, okB, "step %d", i)
			}
			t.Logf("%s: %d admitted unchanged, %d with changes", name, nA, nB)
		})
	}
}

// TestShaperSetLimitNeverExceedsLarger drives a Shaper flat out through a
// change from one limit to another at a random instant, both ways, and
// checks in every interval of the schedule that the admissions do not
// exceed what the larger limit allows on its own: C + ⌊L/i⌋ for token
// buckets, N in any window of Per for sliding logs.
func TestShaperSetLimitNeverExceedsLarger(t *testing.T) {
	type pair struct {
		small, large Limit
		bound        func(span time.Duration) int // the larger's promise over a closed interval of span
	}
	pairs := map[string]pair{
		"token bucket": {TokenBucket(PerSecond(10), 5), TokenBucket(PerSecond(20), 10),
			func(span time.Duration) int { return 10 + int(span/(50*time.Millisecond)) }},
		"sliding log": {SlidingLog(PerSecond(10)), SlidingLog(PerSecond(20)),
			func(span time.Duration) int { return 20 * (1 + int(span/time.Second)) }},
		// Across algorithms: SlidingLog(10/s) allows at least as much as
		// TokenBucket(5/s, 5) at every length of interval.
		"token bucket and sliding log": {TokenBucket(PerSecond(5), 5), SlidingLog(PerSecond(10)),
			func(span time.Duration) int { return 10 * (1 + int(span/time.Second)) }},
	}
	for name, p := range pairs {
		for _, dir := range []string{"up", "down"} {
			t.Run(name+" "+dir, func(t *testing.T) {
				first, second := p.small, p.large
				if dir == "down" {
					first, second = p.large, p.small
				}
				rng := rand.New(rand.NewPCG(3, 4))
				for run := range 20 {
					s, err := NewShaper(first)
					require.NoError(t, err)
					start := time.Unix(1_700_000_000, 0)
					change := time.Duration(rng.IntN(3000)) * time.Millisecond
					var admitted []time.Duration
					for d := time.Duration(0); d < 5*time.Second; d += time.Millisecond {
						if d == change {
							require.NoError(t, s.SetLimitAt(start.Add(d), second))
						}
						if s.AllowAt(start.Add(d), 1) {
							admitted = append(admitted, d)
						}
					}
					for i := range admitted {
						for j := i; j < len(admitted); j++ {
							if n, span := j-i+1, admitted[j]-admitted[i]; n > p.bound(span) {
								t.Fatalf("run %d, change at %v: %d admitted in [%v, %v], the larger allows %d",
									run, change, n, admitted[i], admitted[j], p.bound(span))
							}
						}
					}
				}
			})
		}
	}
}

// TestShaperSetLimitKeepsQueuedInstants: reservations queued under the old
// limit keep their instants, so the new limit books after the last of
// them, never between: 20 reserved at once under TokenBucket(10/s, 1)
// (0 s to 1.9 s), then a change to TokenBucket(20/s, 1) and 20 more. Every
// interval holds at most what the larger allows, 1 + ⌊span/50 ms⌋. Before,
// the queue was rescaled to the new interval, and the new bookings fell
// between the old ones: 29 in [1.0 s, 1.9 s] (a new user's trial).
func TestShaperSetLimitKeepsQueuedInstants(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, tt := range []struct {
		name     string
		from, to Limit
		interval time.Duration // the larger's
		burst    int
	}{
		{"token bucket, faster", TokenBucket(PerSecond(10), 1), TokenBucket(PerSecond(20), 1), 50 * time.Millisecond, 1},
		{"token bucket, faster and larger", TokenBucket(PerSecond(10), 5), TokenBucket(PerSecond(20), 10), 50 * time.Millisecond, 10},
		{"pacer, faster", LeakyBucket(PerSecond(10), LeakyOptions{Slack: 2}), LeakyBucket(PerSecond(20), LeakyOptions{Slack: 2}), 50 * time.Millisecond, 3},
		{"token bucket, slower", TokenBucket(PerSecond(20), 1), TokenBucket(PerSecond(10), 1), 50 * time.Millisecond, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewShaper(tt.from)
			require.NoError(t, err)
			var at []time.Duration
			reserve := func() {
				for range 20 {
					r, err := s.ReserveAt(t0, 1, 0)
					require.NoError(t, err)
					at = append(at, r.Delay)
				}
			}
			reserve()
			require.NoError(t, s.SetLimitAt(t0, tt.to))
			reserve()
			slices.Sort(at)
			for i := range at {
				for j := i; j < len(at); j++ {
					if n, bound := j-i+1, tt.burst+int((at[j]-at[i])/tt.interval); n > bound {
						t.Fatalf("%d booked in [%v, %v], the larger allows %d", n, at[i], at[j], bound)
					}
				}
			}
		})
	}
}

// TestShaperSetLimitAcrossCountsWindow: a token bucket changed to a
// sliding log carries, as used, every unit the bucket may have let through
// within the log's window, not only what it holds drained: TokenBucket(5/s,
// 5) took 5 at 0 s and one at each of 0.2, 0.4, 0.6 and 0.8 s, 9 in all;
// SlidingLog(10/s) at 0.8 s may take 1 more, not 5 (14 in 0.8 s before, a
// new user's trial).
func TestShaperSetLimitAcrossCountsWindow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	s, err := NewShaper(TokenBucket(PerSecond(5), 5))
	require.NoError(t, err)
	for range 5 {
		require.True(t, s.AllowAt(t0, 1))
	}
	for i := 1; i <= 4; i++ {
		require.True(t, s.AllowAt(t0.Add(time.Duration(i)*200*time.Millisecond), 1))
	}
	at := t0.Add(800 * time.Millisecond)
	require.NoError(t, s.SetLimitAt(at, SlidingLog(PerSecond(10))))
	more := 0
	for s.AllowAt(at, 1) {
		more++
	}
	assert.LessOrEqual(t, 9+more, 10, "admitted in [0 s, 0.8 s], the sliding log allows 10")

	// A bucket full again at the change may still have let units through
	// within the window: TokenBucket(5/s, 1) took one at each of 0.2 to
	// 0.8 s, and is full at 1 s.
	s, err = NewShaper(TokenBucket(PerSecond(5), 1))
	require.NoError(t, err)
	for i := 1; i <= 4; i++ {
		require.True(t, s.AllowAt(t0.Add(time.Duration(i)*200*time.Millisecond), 1))
	}
	at = t0.Add(time.Second)
	require.NoError(t, s.SetLimitAt(at, SlidingLog(PerSecond(10))))
	more = 0
	for s.AllowAt(at, 1) {
		more++
	}
	assert.LessOrEqual(t, 4+more, 10, "admitted in (0 s, 1 s], the sliding log allows 10")
}

// TestShaperSetLimitCarriesUse: a change to another algorithm, or to a
// window of another length, carries what was used, booked at the change.
func TestShaperSetLimitCarriesUse(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tt := range []struct {
		name     string
		from, to Limit
		used     int // units taken under from
		wantFree int // units the new limit grants at the change
	}{
		{"fixed window to token bucket", FixedWindow(PerSecond(10)), TokenBucket(PerSecond(10), 10), 7, 3},
		{"token bucket to sliding log", TokenBucket(PerSecond(10), 10), SlidingLog(PerSecond(10)), 10, 0},
		{"fixed window of 1 s to 1 min", FixedWindow(PerSecond(10)), FixedWindow(PerMinute(20)), 10, 10},
		{"all of two to one", All(TokenBucket(PerSecond(10), 5), SlidingLog(PerMinute(100))), SlidingLog(PerMinute(100)), 5, 95},
		{"one to all of two", SlidingLog(PerMinute(100)), All(TokenBucket(PerSecond(10), 5), SlidingLog(PerMinute(100))), 50, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewShaper(tt.from)
			require.NoError(t, err)
			for range tt.used {
				require.True(t, s.AllowAt(now, 1))
			}
			require.NoError(t, s.SetLimitAt(now, tt.to))
			free := 0
			for s.AllowAt(now, 1) {
				free++
			}
			assert.Equal(t, tt.wantFree, free)
		})
	}
}

// TestShaperSetLimitRejectsBadLimit: an invalid or zero Limit is refused,
// the Shaper unchanged.
func TestShaperSetLimitRejectsBadLimit(t *testing.T) {
	s, err := NewShaper(TokenBucket(PerSecond(1), 1))
	require.NoError(t, err)
	assert.ErrorIs(t, s.SetLimitAt(time.Now(), TokenBucket(PerSecond(0), 1)), ErrInvalidConfig)
	assert.ErrorIs(t, s.SetLimitAt(time.Now(), Limit{}), ErrInvalidConfig)
	assert.Equal(t, "token bucket 1/1s burst 1", s.String())
}

// TestKeyedSetLimitAtRebooksWaiters: requests queued behind a slow pacer
// give their slots back on a change to a faster limit and leave at the new
// pace, and the change keeps what each key used.
func TestKeyedSetLimitAtRebooksWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := NewKeyed(LeakyBucket(PerSecond(1), LeakyOptions{Queue: 10}), KeyedOptions{})
		require.NoError(t, err)
		ctx := context.Background()
		start := time.Now()
		p, err := k.Wait(ctx, "a", 0) // leaves at once; the next slot is 1 s away
		require.NoError(t, err)
		k.Settle(p, throttle.Outcome{Sent: true, Response: true})
		var wg sync.WaitGroup
		left := make(chan time.Duration, 5)
		for range 5 {
			wg.Go(func() {
				p, err := k.Wait(ctx, "a", 0)
				if assert.NoError(t, err) {
					left <- time.Since(start)
					k.Settle(p, throttle.Outcome{Sent: true, Response: true})
				}
			})
		}
		synctest.Wait() // all five booked at 1 s .. 5 s
		require.NoError(t, k.SetLimitAt(time.Now(), LeakyBucket(PerSecond(10), LeakyOptions{Queue: 10})))
		wg.Wait()
		close(left)
		var last time.Duration
		for d := range left {
			last = max(last, d)
		}
		// The first request's unit is carried: 100 ms, then 100 ms apart.
		assert.Equal(t, 500*time.Millisecond, last)
		assert.Equal(t, "keyed leaky bucket 10/1s queue 10", k.String())
		assert.ErrorIs(t, k.SetLimitAt(time.Now(), Limit{}), ErrInvalidConfig)
	})
}

// TestKeyedSetLimitAtConcurrent changes the limit while goroutines use the
// store (go test -race finds any unguarded access; Wait read the limit
// unguarded before).
func TestKeyedSetLimitAtConcurrent(t *testing.T) {
	k, err := NewKeyed(TokenBucket(PerSecond(1000), 10), KeyedOptions{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		wg.Go(func() {
			keys := []string{"a", "b", string(rune('c' + g))}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k.Allow(keys[i%3])
				_, _ = k.ReserveAt(time.Now(), keys[i%3], 1, time.Millisecond)
				if p, err := k.Wait(t.Context(), keys[i%3], time.Millisecond); err == nil {
					k.Settle(p, throttle.Outcome{Sent: true, Response: true})
				}
			}
		})
	}
	for i := range 200 {
		l := TokenBucket(PerSecond(1000+i), 10)
		if i%2 == 1 {
			l = SlidingLog(PerSecond(500))
		}
		require.NoError(t, k.SetLimitAt(time.Now(), l))
		_ = k.String()
	}
	close(stop)
	wg.Wait()
}

// TestTransportSetLimit changes a host's limit on a running Transport:
// the requests after the change are spaced by the new limit; an unlisted
// host or a zero Limit is refused.
func TestTransportSetLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
			return testhttp.Response(http.StatusOK), nil
		}}
		tr := &Transport{Base: srv, Limits: Hosts{"api.test": {Limit: LeakyBucket(PerSecond(1), LeakyOptions{})}}}
		get := func() {
			req, _ := http.NewRequest("GET", "http://api.test/", nil)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
		get()
		get()
		require.NoError(t, tr.SetLimit("API.test", LeakyBucket(PerSecond(10), LeakyOptions{})))
		get()
		get()
		assert.Equal(t, []time.Duration{time.Second, 100 * time.Millisecond, 100 * time.Millisecond}, gaps(srv.Requests()))
		assert.ErrorIs(t, tr.SetLimit("other.test", TokenBucket(PerSecond(1), 1)), ErrInvalidConfig)
		assert.ErrorIs(t, tr.SetLimit("api.test", Limit{}), ErrInvalidConfig)
	})
}

// setLimitUnderLoad runs g goroutines sending GETs in a loop through a
// Transport whose host starts at from, changes the host's limit to to at
// 1 s, stops at 2 s, and returns the arrivals in the second after the change
// and the errors (each goroutine stops at its first).
func setLimitUnderLoad(t *testing.T, g int, from, to Limit) (after []time.Duration, errs []error) {
	srv := &testhttp.Server{Handle: func(int, testhttp.Received) (*http.Response, error) {
		return testhttp.Response(http.StatusOK), nil
	}}
	tr := &Transport{Base: srv, Limits: Hosts{"api.test": {Limit: from}}, MaxWait: 5 * time.Second}
	start := time.Now()
	ctx, cancel := context.WithCancel(t.Context())
	defer time.AfterFunc(2*time.Second, cancel).Stop()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
					return
				}
				resp.Body.Close()
			}
		})
	}
	time.Sleep(time.Second)
	require.NoError(t, tr.SetLimit("api.test", to))
	wg.Wait()
	for _, r := range srv.Requests() {
		if d := r.At.Sub(start); d >= time.Second && d < 2*time.Second {
			after = append(after, d)
		}
	}
	return after, errs
}

// TestTransportSetLimitSameTokenBucketKeepsPace: setting a token-bucket
// host's limit to the one it has, while 20 requests are queued, changes
// nothing: the queue keeps leaving 50 ms apart (the waiters' slots are given
// back whole and booked again where they were), with no gap and no error.
func TestTransportSetLimitSameTokenBucketKeepsPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		after, errs := setLimitUnderLoad(t, 20, TokenBucket(PerSecond(20), 5), TokenBucket(PerSecond(20), 5))
		assert.Empty(t, errs)
		require.NotEmpty(t, after)
		assert.InDelta(t, 19, len(after), 1, "arrivals in the second after the change at 20/s")
		prev := time.Second
		for _, d := range after {
			assert.LessOrEqual(t, d-prev, 55*time.Millisecond, "gap ending at %v", d) // 50 ms and the departure margin
			prev = d
		}
	})
}

// TestTransportSetLimitSlowerTokenBucketTakesOver: a change to a slower
// token bucket while 20 requests are queued paces them at the new rate at
// once: 5/s in the second after the change, and none refused (their waits,
// 200 ms apart, stay within MaxWait).
func TestTransportSetLimitSlowerTokenBucketTakesOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		after, errs := setLimitUnderLoad(t, 20, TokenBucket(PerSecond(20), 5), TokenBucket(PerSecond(5), 1))
		assert.Empty(t, errs)
		assert.InDelta(t, 5, len(after), 1, "arrivals in the second after the change at 5/s")
		if assert.NotEmpty(t, after) {
			assert.Less(t, after[0], 1250*time.Millisecond, "the first arrival after the change")
		}
	})
}

// TestShaperSetLimitAcrossAlgorithmsCost pins the cost that Shaper.SetLimitAt
// documents for a change across algorithms: the old limit's count is booked
// at the change, so a sliding log holds it for a whole window and a token
// bucket drains it at its rate; between token buckets, a drained bucket
// changed to a smaller one is drained, not in debt.
func TestShaperSetLimitAcrossAlgorithmsCost(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, tt := range []struct {
		name     string
		from, to Limit
		next     time.Duration // the next unit's delay after the change at t0
	}{
		{"sliding counter to sliding log", SlidingCounter(PerSecond(20)), SlidingLog(PerSecond(20)), time.Second},
		{"sliding counter to token bucket", SlidingCounter(PerSecond(20)), TokenBucket(PerSecond(20), 5), 800 * time.Millisecond},
		{"token bucket to a smaller one", TokenBucket(PerSecond(20), 20), TokenBucket(PerSecond(5), 1), 200 * time.Millisecond},
		{"token bucket to the same", TokenBucket(PerSecond(20), 20), TokenBucket(PerSecond(20), 20), 50 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewShaper(tt.from)
			require.NoError(t, err)
			for range 20 {
				require.True(t, s.AllowAt(t0, 1))
			}
			require.NoError(t, s.SetLimitAt(t0, tt.to))
			r, err := s.ReserveAt(t0, 1, 0)
			require.NoError(t, err)
			assert.Equal(t, tt.next, r.Delay)
		})
	}
}
