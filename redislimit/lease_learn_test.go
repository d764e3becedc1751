package redislimit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/retry"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leaseLearnLease is the lease of the tests of what answers teach in
// lease mode: long enough that waiting for a renewal would show.
const leaseLearnLease = time.Second

// leasedFleet returns the clients of n processes sharing limit by leases
// through the Redis at addr under prefix, as fleet does.
func leasedFleet(t *testing.T, addr string, limit pace.Limit, prefix string, n int, policy retry.Policy) []*http.Client {
	t.Helper()
	clients := make([]*http.Client, n)
	for i := range clients {
		lim := newLimiter(t, newClient(t, addr), limit, Options{Prefix: prefix, Lease: leaseLearnLease})
		base := &http.Transport{}
		t.Cleanup(base.CloseIdleConnections)
		clients[i] = &http.Client{Transport: &pace.Transport{Base: base, Limiter: lim, Retry: policy}}
	}
	return clients
}

// stamped records the instant of each arrival before h answers it.
type stamped struct {
	h  http.Handler
	mu sync.Mutex
	at []time.Time
}

func (s *stamped) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	s.h.ServeHTTP(w, r)
}

// busiest returns the most arrivals in any window of d from the first
// full window of the quota server on: in the window the first arrival
// fell in, the quota may have had a short time left to spread its
// requests over, no slower than the Limit (it teaches nothing then).
func (s *stamped) busiest(d time.Duration) int {
	s.mu.Lock()
	at := append([]time.Time(nil), s.at...)
	s.mu.Unlock()
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	if len(at) > 0 {
		full := time.Unix(0, (at[0].UnixNano()/int64(quotaWindow)+1)*int64(quotaWindow))
		at = at[sort.Search(len(at), func(i int) bool { return !at[i].Before(full) }):]
	}
	worst, j := 0, 0
	for i := range at {
		for j < len(at) && at[j].Before(at[i].Add(d)) {
			j++
		}
		worst = max(worst, j-i)
	}
	return worst
}

// TestLeaseQuotaPace: in lease mode, the pace that the server's quota
// headers teach holds every share, as in the per-decision mode
// (TestQuotaPaceShared). Four processes share SlidingLog(PerSecond(20))
// by leases of 1 s against a server allowing 20 requests per 4 s, which
// states its quota in X-RateLimit-* (GitHub's) or the IETF fields
// (draft-ietf-httpapi-ratelimit-headers). The Limit alone would spend
// each window's 20 in its first second. Each share takes its part of the
// quota's pace at the answer that taught it, not at its next renewal:
// 80 calls meet no 429, and from the first full window on no second
// holds more than 16 arrivals, where the Limit alone lets a window's 20
// through in its first second. The 16: a window's pace ends at its
// reset, so up to 8 requests (one per goroutine) may leave before the
// new window's first answer teaches its pace; then each of the 4 shares
// keeps to its part, one request per 4 of the fleet's intervals, at
// least 0.8 s while 18 or fewer are left for up to 4 s, its first at a
// random phase: at most 2 in a second (docs/fleet.md has the figures).
// It does not run in
// parallel with the package's other learning tests: beside their fleets of
// processes, 2 of 3 CI runs met one 429 here (its busiest window is
// always exactly 20 of 20; see docs/fleet.md).
func TestLeaseQuotaPace(t *testing.T) {
	srv := realserver.StartRedis(t)
	for _, ietf := range []bool{false, true} {
		name, bound := "X-RateLimit", 21*time.Second
		if ietf {
			name, bound = "IETF RateLimit", 23*time.Second
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := &quotaServer{ietf: ietf}
			st := &stamped{h: api}
			hs := httptest.NewServer(st)
			defer hs.Close()
			clients := leasedFleet(t, srv.Addr(), pace.SlidingLog(pace.PerSecond(quotaN)), "lq"+strconv.FormatBool(ietf)+":", 4, retry.Policy{})
			const calls = 4 * quotaN
			jobs := make(chan int, calls)
			for i := range calls {
				jobs <- i
			}
			close(jobs)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			var mu sync.Mutex
			failed := 0
			for _, c := range clients {
				for range 2 {
					wg.Go(func() {
						for i := range jobs {
							if !get(ctx, c, hs.URL+"/items/"+strconv.Itoa(i)) {
								mu.Lock()
								failed++
								mu.Unlock()
							}
						}
					})
				}
			}
			wg.Wait()
			hs.CloseClientConnections()

			busiest := st.busiest(time.Second)
			api.mu.Lock()
			defer api.mu.Unlock()
			elapsed := api.last.Sub(api.first)
			t.Logf("%s: %d answered 200, %d × 429, %d calls failed, busiest second %d, busiest window %d, done in %v",
				name, api.ok, api.refused, failed, busiest, api.perWindowMax, elapsed.Round(time.Millisecond))
			assert.Zero(t, api.refused, "429s")
			assert.Equal(t, calls, api.ok, "every call served")
			assert.Zero(t, failed)
			assert.LessOrEqual(t, busiest, 16, "arrivals in the busiest second: the quota's pace, not the Limit's 20")
			assert.LessOrEqual(t, elapsed, bound, "done in time")
		})
	}
}

// TestLeaseAdaptiveRate: in lease mode, four processes configured at
// twice what a token-bucket server allows (TokenBucket(PerSecond(40), 5)
// shared by leases of 1 s, against the server's 20/s, burst 5) find the
// server's rate together, as in the per-decision mode
// (TestAdaptiveRateShared): each 429 that names no delay cuts the key's
// rate in Redis (CUBIC), every share takes its part of the cut rate, and
// it grows back along the curve. After the first 10 s, at most 5 % of the
// arrivals are answered 429, and at least 90 % of 20/s is served.
// Counted at the server.
func TestLeaseAdaptiveRate(t *testing.T) {
	t.Parallel()
	srv := realserver.StartRedis(t)
	const (
		rate   = 20
		run    = 22 * time.Second
		warmup = 10 * time.Second
	)
	api := &bucketServer{rate: rate, burst: 5}
	hs := httptest.NewServer(api)
	defer hs.Close()
	clients := leasedFleet(t, srv.Addr(), pace.TokenBucket(pace.PerSecond(2*rate), 5), "ladapt:", 4, retry.Policy{MaxAttempts: 10})
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(run))
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range clients {
		for range 4 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					get(ctx, c, hs.URL+"/items/"+strconv.Itoa(i))
				}
			})
		}
	}
	wg.Wait()
	hs.CloseClientConnections()

	checkAdaptive(t, api, start, warmup, run, rate)
}

// TestLeaseReadsLearnedPace: a renewal replies the key's learned pace
// at Redis's now, as a decision reads it (luaLearned, luaInterval): the
// quota's interval while its window lasts, none after it, and none from
// a record of another type.
func TestLeaseReadsLearnedPace(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := waitCtx(t, 10*time.Second)
	keys := []string{"ll:{k}:s", "ll:{k}:p", "ll:{k}:l"}
	renew := func(now int64) leaseReply {
		t.Helper()
		r, err := runLease(ctx, rdb, keys, "a", leaseReq{want: -1}, shU, shL, shLead, shSpan, now, shUp)
		require.NoError(t, err)
		return r
	}
	assert.Zero(t, renew(shT0).pace, "no record")
	// qi qu ql qn qb as aw ac: 200 ms apart until 4 s after shT0.
	require.NoError(t, rdb.Set(ctx, keys[2], fmt.Sprintf("200000 %d %d 19 0 0 0 0", shT0+4_000_000, shT0), time.Minute).Err())
	assert.Equal(t, 200*time.Millisecond, renew(shT0+1_000_000).pace)
	assert.Zero(t, renew(shT0+4_000_001).pace, "the quota's window ended")
	require.NoError(t, rdb.Del(ctx, keys[2]).Err())
	require.NoError(t, rdb.HSet(ctx, keys[2], "f", "v").Err())
	assert.Zero(t, renew(shT0+5_000_000).pace, "someone else's key")
}

// TestLeaseSharePaced: a share keeps to its part of a learned pace
// slower than it: a pacer of one request per U/units intervals of the
// pace beside the share; a pace no slower than the share needs none.
func TestLeaseSharePaced(t *testing.T) {
	l := pace.SlidingLog(pace.PerSecond(20))
	parts, err := convert(l, 0)
	require.NoError(t, err)
	ls, err := newLeaser(l, parts, Options{Lease: time.Second}, DefaultTimeout, 0)
	require.NoError(t, err)
	_, paced, ok := ls.pacer(5, 0)
	assert.True(t, ok)
	assert.False(t, paced, "no pace learnt")
	_, paced, ok = ls.pacer(5, 40*time.Millisecond) // 25/s: faster than the Limit's 20/s
	assert.True(t, ok)
	assert.False(t, paced, "a pace faster than the share")
	p, paced, ok := ls.pacer(5, 200*time.Millisecond) // 5/s for the fleet: this quarter 1.25/s
	require.True(t, ok)
	require.True(t, paced)
	alg, r, burst, _ := p.Params()
	assert.Equal(t, throttle.TokenBucket, alg)
	assert.Equal(t, pace.Rate{N: 1, Per: 800 * time.Millisecond}, r, "200 ms × 20/5")
	assert.Equal(t, 1, burst)
	_, _, ok = ls.pacer(1, time.Duration(maxPause)*time.Microsecond)
	assert.False(t, ok, "a pacer slower than the longest pause admits nothing")
}

// get sends one GET to url through c, and reports whether it completed.
func get(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
