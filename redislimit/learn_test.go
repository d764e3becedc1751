package redislimit

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quotaServer allows quotaN requests in each window of quotaWindow,
// aligned to Unix time as GitHub's X-RateLimit-Reset (a Unix second)
// names a window's end, answers 429 once a window's are spent, and states
// its quota in every answer: X-RateLimit-Limit, -Remaining and -Reset, or
// with ietf the IETF fields (draft-ietf-httpapi-ratelimit-headers §3, §4:
// RateLimit-Policy "q" and "w", RateLimit "r" and "t", t in whole
// seconds, rounded up so that the quota is never said to be whole
// before it is).
type quotaServer struct {
	ietf bool

	mu           sync.Mutex
	window       int64 // the current window's index
	used         int   // requests admitted in it
	ok, refused  int
	first, last  time.Time // the first arrival, the last answer written
	perWindowMax int
}

const (
	quotaN      = 20
	quotaWindow = 4 * time.Second
)

func (s *quotaServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.first.IsZero() {
		s.first = now
	}
	if win := now.UnixNano() / int64(quotaWindow); win != s.window {
		s.window, s.used = win, 0
	}
	status := http.StatusOK
	if s.used < quotaN {
		s.used++
		s.ok++
		s.perWindowMax = max(s.perWindowMax, s.used)
	} else {
		status = http.StatusTooManyRequests
		s.refused++
	}
	end := time.Unix(0, (s.window+1)*int64(quotaWindow))
	left := strconv.Itoa(quotaN - s.used)
	if s.ietf {
		secs := (end.Sub(now) + time.Second - 1) / time.Second
		w.Header().Set("RateLimit-Policy", `"default";q=`+strconv.Itoa(quotaN)+`;w=`+strconv.Itoa(int(quotaWindow/time.Second)))
		w.Header().Set("RateLimit", `"default";r=`+left+`;t=`+strconv.Itoa(int(secs)))
	} else {
		w.Header().Set("X-RateLimit-Limit", strconv.Itoa(quotaN))
		w.Header().Set("X-RateLimit-Remaining", left)
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(end.Unix(), 10))
	}
	w.WriteHeader(status)
	s.last = time.Now()
}

// TestQuotaPaceShared: four processes with no limit configured share,
// through Redis, the pace that the server's quota headers teach (as
// package pace's Keyed learns it in one process): the remaining requests
// spread over the time to the reset, and a spent quota pausing the key
// until the reset in every process. Against a server allowing 20
// requests per 4 s, 120 calls from the four (two goroutines each) meet no
// 429, and are done by 24.5 s: six windows, the last of them nearly
// whole, as its 20 requests are spread over it (23.8 s at most). Both
// with X-RateLimit-Reset, a Unix second, and with the IETF t, a whole
// number of seconds to the reset, rounded up: up to a second late, but
// resets within a second name one window, and the earliest is kept.
func TestQuotaPaceShared(t *testing.T) {
	t.Parallel()
	srv := realserver.StartRedis(t)
	for _, ietf := range []bool{false, true} {
		name := "X-RateLimit"
		if ietf {
			name = "IETF RateLimit"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := &quotaServer{ietf: ietf}
			hs := httptest.NewServer(api)
			defer hs.Close()
			const calls = 6 * quotaN
			q := runFleet(t, "quota", srv.Addr(), hs.URL, "quota"+strconv.FormatBool(ietf)+":", 4, calls)
			hs.CloseClientConnections()

			api.mu.Lock()
			defer api.mu.Unlock()
			elapsed := api.last.Sub(api.first)
			t.Logf("%s: %d answered 200, %d × 429, %d calls failed, busiest window %d, done in %v",
				name, api.ok, api.refused, q.failed, api.perWindowMax, elapsed.Round(time.Millisecond))
			assert.Zero(t, api.refused, "429s")
			assert.Equal(t, calls, api.ok, "every call served")
			assert.Zero(t, q.failed)
			assert.LessOrEqual(t, elapsed, 24500*time.Millisecond, "done in time")
		})
	}
}

// bucketServer admits arrivals through a token bucket of rate a second
// and burst capacity, answering 429 without Retry-After or any quota
// header when it is empty, and logs every arrival.
type bucketServer struct {
	rate, burst float64

	mu       sync.Mutex
	tokens   float64
	last     time.Time
	arrivals []arrival
}

type arrival struct {
	at time.Time
	ok bool
}

func (s *bucketServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	now := time.Now()
	if s.last.IsZero() {
		s.tokens, s.last = s.burst, now
	}
	s.tokens = min(s.burst, s.tokens+now.Sub(s.last).Seconds()*s.rate)
	s.last = now
	ok := s.tokens >= 1
	if ok {
		s.tokens--
	}
	s.arrivals = append(s.arrivals, arrival{now, ok})
	s.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// The adaptive fleet's server rate, and how long its processes call.
const (
	adaptRate = 20
	adaptRun  = 22 * time.Second
)

// TestAdaptiveRateShared: four processes configured at twice what a
// token-bucket server allows (a shared TokenBucket of 40/s against its
// 20/s, burst 5) find the server's rate together, as one process's
// adaptive rate does (bench/cmd/scenarios, adaptive-2x): each 429 that
// names no delay cuts the key's rate in Redis for all of them (CUBIC),
// and the rate grows back along the curve. Each process calls from four
// goroutines. After the first 10 s, at most 5 % of the arrivals are
// answered 429, and at least 90 % of 20/s is served. Counted at the
// server.
func TestAdaptiveRateShared(t *testing.T) {
	t.Parallel()
	srv := realserver.StartRedis(t)
	const warmup = 10 * time.Second
	api := &bucketServer{rate: adaptRate, burst: 5}
	hs := httptest.NewServer(api)
	defer hs.Close()
	q := runFleet(t, "adaptive", srv.Addr(), hs.URL, "adapt:", 4, 0)
	hs.CloseClientConnections()

	checkAdaptive(t, api, q.start, warmup, adaptRun, adaptRate)
}

// checkAdaptive checks the bucket server's arrivals from start: after
// warmup and before run, at most 5 % answered 429, and at least 90 % of
// rate served.
func checkAdaptive(t *testing.T, api *bucketServer, start time.Time, warmup, run time.Duration, rate int) {
	t.Helper()
	api.mu.Lock()
	defer api.mu.Unlock()
	warm, end := start.Add(warmup), start.Add(run)
	early, late, served := 0, 0, 0
	for _, a := range api.arrivals {
		switch {
		case a.at.Before(warm):
			if !a.ok {
				early++
			}
		case !a.at.Before(end):
		case a.ok:
			served++
		default:
			late++
		}
	}
	share := float64(late) / float64(max(late+served, 1))
	tput := float64(served) / (run - warmup).Seconds()
	t.Logf("%d arrivals; 429s in the first %v: %d; after it: %d × 429 of %d (%.1f%%), %.1f/s served (%.0f%% of %d/s)",
		len(api.arrivals), warmup, early, late, late+served, 100*share, tput, 100*tput/float64(rate), rate)
	assert.LessOrEqual(t, share, 0.05, "share of arrivals answered 429 after the first 10 s")
	assert.GreaterOrEqual(t, tput, 0.9*float64(rate), "served after the first 10 s")
}

// TestLearnedPaceInRedis: what Settle learns is in Redis, for every
// Limiter of the prefix, and the next decision applies it, as package
// pace's Keyed does in one process: a quota spreads its remaining
// requests over its reset (an answer that contradicts it, more remaining
// in the same window, is old news); a spent quota pauses the key until
// its reset, without a probe; a cut slows a limited key below its limit.
// Resets within a second of each other name one window: the earliest is
// kept. Permit.Limited tells whether a limit paces the key.
func TestLearnedPaceInRedis(t *testing.T) {
	_, rdb := startRedis(t)
	rdb2 := newClient(t, rdb.Options().Addr)
	ctx := waitCtx(t, 20*time.Second)
	refusedAfter := func(t *testing.T, lim *Limiter, key string) time.Duration {
		t.Helper()
		_, err := lim.Wait(ctx, key, time.Millisecond)
		var we *pace.WaitError
		require.ErrorAs(t, err, &we)
		require.ErrorIs(t, err, pace.ErrWaitTooLong)
		return we.Delay
	}
	answered := func(q throttle.Quota) throttle.Outcome {
		return throttle.Outcome{Sent: true, Response: true, Quota: q}
	}

	t.Run("quota pace, shared", func(t *testing.T) {
		a := newLimiter(t, rdb, pace.Limit{}, Options{Prefix: "q1:"})
		b := newLimiter(t, rdb2, pace.Limit{}, Options{Prefix: "q1:"})
		p, err := a.Wait(ctx, "k", 0)
		require.NoError(t, err)
		assert.False(t, p.Limited, "no limit configured")
		assert.False(t, p.Track, "nothing to move on departure")
		a.Settle(p, answered(throttle.Quota{Remaining: 4, Reset: 10 * time.Second}))
		assert.InDelta(t, 2*time.Second, refusedAfter(t, b, "k"), float64(100*time.Millisecond), "10 s / (4+1), in the other process")
		a.Settle(throttle.Permit{Key: "k"}, answered(throttle.Quota{Remaining: 9, Reset: 10 * time.Second}))
		assert.InDelta(t, 2*time.Second, refusedAfter(t, b, "k"), float64(100*time.Millisecond), "more remaining in the same window: old news")
		a.Settle(throttle.Permit{Key: "k"}, answered(throttle.Quota{Remaining: 1, Reset: 10 * time.Second}))
		assert.InDelta(t, 5*time.Second, refusedAfter(t, b, "k"), float64(100*time.Millisecond), "10 s / (1+1)")
	})

	t.Run("resets within a second are one, the earliest", func(t *testing.T) {
		a := newLimiter(t, rdb, pace.Limit{}, Options{Prefix: "q6:"})
		b := newLimiter(t, rdb2, pace.Limit{}, Options{Prefix: "q6:"})
		a.Settle(throttle.Permit{Key: "k"}, answered(throttle.Quota{Remaining: 4, Reset: 10 * time.Second}))
		a.Settle(throttle.Permit{Key: "k"}, answered(throttle.Quota{Remaining: 3, Reset: 10900 * time.Millisecond}))
		assert.InDelta(t, 2500*time.Millisecond, refusedAfter(t, b, "k"), float64(100*time.Millisecond), "10 s / (3+1), not 10.9 s / (3+1)")
		a.Settle(throttle.Permit{Key: "k"}, answered(throttle.Quota{Remaining: 0, Reset: 10900 * time.Millisecond}))
		assert.InDelta(t, 10*time.Second, refusedAfter(t, b, "k"), float64(100*time.Millisecond), "paused until the earliest reset")
	})

	t.Run("spent quota pauses without a probe", func(t *testing.T) {
		a := newLimiter(t, rdb, pace.Limit{}, Options{Prefix: "q2:"})
		b := newLimiter(t, rdb2, pace.Limit{}, Options{Prefix: "q2:"})
		a.Settle(throttle.Permit{Key: "k"}, answered(throttle.Quota{Remaining: 0, Reset: 300 * time.Millisecond}))
		assert.InDelta(t, 300*time.Millisecond, refusedAfter(t, b, "k"), float64(50*time.Millisecond), "paused until the reset")
		time.Sleep(320 * time.Millisecond)
		for range 3 {
			p, err := b.Wait(ctx, "k", 10*time.Millisecond)
			require.NoError(t, err)
			assert.False(t, p.Probe, "no probe after a spent quota")
			assert.Zero(t, p.Delay, "the pace ended with the quota")
		}
	})

	t.Run("no limit: a throttle pauses, then one probe", func(t *testing.T) {
		a := newLimiter(t, rdb, pace.Limit{}, Options{Prefix: "q5:"})
		b := newLimiter(t, rdb2, pace.Limit{}, Options{Prefix: "q5:"})
		p, err := a.Wait(ctx, "k", 0)
		require.NoError(t, err)
		a.Settle(p, throttle.Outcome{Sent: true, Response: true, Pause: 200 * time.Millisecond})
		assert.InDelta(t, 200*time.Millisecond, refusedAfter(t, b, "k"), float64(50*time.Millisecond), "paused in the other process")
		time.Sleep(220 * time.Millisecond)
		probe, err := b.Wait(ctx, "k", 10*time.Millisecond)
		require.NoError(t, err)
		assert.True(t, probe.Probe)
		_, err = a.Wait(ctx, "k", 10*time.Millisecond)
		assert.ErrorIs(t, err, pace.ErrWaitTooLong, "held behind the probe")
		b.Settle(probe, answered(throttle.Quota{}))
		p, err = a.Wait(ctx, "k", 10*time.Millisecond)
		require.NoError(t, err)
		assert.False(t, p.Probe)
		assert.Zero(t, p.Delay, "no limit, no pace")
	})

	t.Run("a quota the limit holds to is not sent", func(t *testing.T) {
		lim := newLimiter(t, rdb, pace.TokenBucket(pace.PerSecond(10), 1), Options{Prefix: "q3:"})
		p, err := lim.Wait(ctx, "k", 0)
		require.NoError(t, err)
		assert.True(t, p.Limited)
		lim.Settle(p, answered(throttle.Quota{Remaining: 50, Reset: time.Second, Limit: 100, Window: time.Second}))
		assert.Zero(t, rdb.Exists(ctx, "q3:{k}:l").Val(), "nothing learnt")
	})

	t.Run("cut", func(t *testing.T) {
		a := newLimiter(t, rdb, pace.TokenBucket(pace.PerSecond(10), 1), Options{Prefix: "q4:"})
		b := newLimiter(t, rdb2, pace.TokenBucket(pace.PerSecond(10), 1), Options{Prefix: "q4:"})
		p, err := a.Wait(ctx, "k", 0)
		require.NoError(t, err)
		p.Track = false // not held to its slot: no margin to widen (see TestMarginLearnedShared)
		a.Settle(p, throttle.Outcome{Sent: true, Response: true, Pause: 50 * time.Millisecond, Cut: true})
		time.Sleep(60 * time.Millisecond)
		probe, err := b.Wait(ctx, "k", time.Second)
		require.NoError(t, err)
		require.True(t, probe.Probe)
		b.Settle(probe, answered(throttle.Quota{}))
		// 0.7 × 10/s: about 143 ms apart, where the limit allows 100 ms.
		d := refusedAfter(t, b, "k")
		assert.Greater(t, d, 120*time.Millisecond, "slower than the limit after the cut")
		assert.Less(t, d, 160*time.Millisecond)
		p2, err := b.Wait(ctx, "k", time.Second)
		require.NoError(t, err)
		p2.Track = false
		b.Settle(p2, throttle.Outcome{Sent: true, Response: true, Pause: 50 * time.Millisecond, Cut: true})
		f := strings.Fields(rdb.Get(ctx, "q4:{k}:l").Val())
		require.Len(t, f, 10)
		w, err := strconv.ParseFloat(f[6], 64)
		require.NoError(t, err)
		// From the curve (7/s just after the first cut, about 8/s 0.25 s
		// later), not from the limit's 10/s; µ-requests a second.
		assert.Greater(t, w, 7e6, "the rate grew after the first cut")
		assert.Less(t, w, 9e6, "the second cut starts from the rate the first left")
	})
}

// TestLearnedRecordIsBounded: a learned record no Settle could write
// (values far in the future, out of range, or no numbers) is repaired by
// the next decision: it holds the key at most the horizon beyond its
// interval, expires within 24 h, or, unreadable, is deleted; a record of
// another type is someone else's data (ErrBadState).
func TestLearnedRecordIsBounded(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	day := time.Duration(maxPause) * time.Microsecond
	lim := newLimiter(t, rdb, pace.Limit{}, Options{Prefix: "lb:"})

	k := plant(t, rdb, "lb:", "far", "l", "1e18 1e18 1e18 -3 nan 1e18 1e300 0")
	_, err := lim.Wait(ctx, "far", time.Second)
	var we *pace.WaitError
	require.ErrorAs(t, err, &we)
	assert.ErrorIs(t, err, pace.ErrWaitTooLong)
	assert.LessOrEqual(t, we.Delay, pace.DefaultMaxWait+day, "the horizon plus the interval at most")
	ttl := rdb.PTTL(ctx, k).Val()
	assert.Greater(t, ttl, time.Duration(0))
	assert.LessOrEqual(t, ttl, day+2*time.Millisecond)
	f := strings.Fields(rdb.Get(ctx, k).Val())
	require.Len(t, f, 10)
	assert.Equal(t, []string{"0", "0", "0", "0", "0", "0", "0"}, f[3:], "counts in range; the cut without a ceiling dropped; no margin")

	k = plant(t, rdb, "lb:", "junk", "l", "not a record")
	p, err := lim.Wait(ctx, "junk", time.Second)
	require.NoError(t, err)
	assert.Zero(t, p.Delay)
	assert.Zero(t, rdb.Exists(ctx, k).Val(), "a record that is not one is deleted")

	require.NoError(t, rdb.HSet(ctx, "lb:{other}:l", "f", "v").Err())
	_, err = lim.Wait(ctx, "other", time.Second)
	assert.ErrorIs(t, err, ErrBadState)
	assert.Contains(t, err.Error(), "lb:{key}:l")
	lim.Settle(throttle.Permit{Key: "other"}, throttle.Outcome{Sent: true, Response: true, Quota: throttle.Quota{Remaining: 1, Reset: time.Second}})
	assert.Equal(t, "hash", rdb.Type(ctx, "lb:{other}:l").Val(), "left alone")
	assert.Zero(t, rdb.Exists(ctx, "lb:{other}:p").Val(), "Settle wrote nothing")
}
