package pace

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/throttle"

	"github.com/pacehttp/pace/internal/quickest"
	"github.com/pacehttp/pace/retry"
)

const msNs = int64(time.Millisecond)

// TestMarginBounds: the margin starts at 1.5 ms, or a 64th of a shorter
// interval, and grows to a 20th of the interval at most.
func TestMarginBounds(t *testing.T) {
	for _, tt := range []struct {
		interval, base, top int64
	}{
		{100 * msNs, 1500 * 1000, 5 * msNs},       // 10/s, nginx limit_req rate=10r/s
		{int64(time.Second) / 75, 208333, 666666}, // 75/s, the batch demo
		{msNs, 15625, 50000},                      // 1000/s
		{10, 0, 0},                                // 10 ns: no margin at all
	} {
		var m margin
		assert.Equal(t, tt.base, m.learnt(tt.interval), "base at %v", time.Duration(tt.interval))
		assert.Equal(t, tt.base, baseMargin(tt.interval))
		assert.Equal(t, tt.top, maxMargin(tt.interval), "top at %v", time.Duration(tt.interval))
	}
}

// TestMarginUntilKnown: a key departs with the widest margin until it has
// had quickest.Run/2 answers, then with the learnt one. Before, a fresh
// nginx whose first answer came late (3 ms, against 0.3 ms later on), with
// no quicker one to compare it with, refused the second request at 10 r/s.
func TestMarginUntilKnown(t *testing.T) {
	const i = 100 * msNs // 10/s
	var m margin
	for range quickest.Run / 2 {
		assert.Equal(t, maxMargin(i), m.at(i), "before the key knows its server")
		m.answer(msNs, i)
	}
	assert.Equal(t, baseMargin(i), m.at(i), "once it knows")
	assert.True(t, m.widen(0, i), "the learnt margin widens from the base")
	assert.Equal(t, 2*baseMargin(i), m.at(i))
}

// TestMarginWidenNarrow: on explicit time, each throttle at the slot doubles
// the margin up to its top, where widen refuses (the throttle is then the
// server's lower limit, for the adaptive cut); marginRun clean answers in a
// row halve it, back to the base; a throttle between restarts the run; a
// widened margin is kept marginRun intervals past its latest change.
func TestMarginWidenNarrow(t *testing.T) {
	const i = 100 * msNs // 10/s
	type step struct {
		op    string // "widen", "clean" (n answers), "forget?"
		n     int
		ok    bool  // widen's answer, forgettable's answer
		at    int64 // the margin after the step
		atNow int64 // the step's instant
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"doubles to the top, then refuses", []step{
			{op: "widen", ok: true, at: 3 * msNs, atNow: 1},
			{op: "widen", ok: true, at: 5 * msNs, atNow: 2}, // 6 ms capped at a 20th
			{op: "widen", ok: false, at: 5 * msNs, atNow: 3},
		}},
		{"halves after a clean run", []step{
			{op: "widen", ok: true, at: 3 * msNs, atNow: 1},
			{op: "widen", ok: true, at: 5 * msNs, atNow: 2},
			{op: "clean", n: marginRun - 1, at: 5 * msNs, atNow: 10},
			{op: "clean", n: 1, at: 2500 * 1000, atNow: 11},
			{op: "clean", n: marginRun, at: 1500 * 1000, atNow: 12}, // never below the base
			{op: "forget?", ok: true, at: 1500 * 1000, atNow: 13},
		}},
		{"a throttle restarts the run", []step{
			{op: "widen", ok: true, at: 3 * msNs, atNow: 1},
			{op: "clean", n: marginRun - 1, at: 3 * msNs, atNow: 2},
			{op: "widen", ok: true, at: 5 * msNs, atNow: 3},
			{op: "clean", n: marginRun - 1, at: 5 * msNs, atNow: 4},
			{op: "clean", n: 1, at: 2500 * 1000, atNow: 5},
		}},
		{"clean answers at the base change nothing", []step{
			{op: "clean", n: 3 * marginRun, at: 1500 * 1000, atNow: 1},
			{op: "forget?", ok: true, at: 1500 * 1000, atNow: 2},
		}},
		{"kept while it could still narrow", []step{
			{op: "widen", ok: true, at: 3 * msNs, atNow: 1000},
			{op: "forget?", ok: false, at: 3 * msNs, atNow: 1000 + marginRun*i - 1},
			{op: "forget?", ok: true, at: 3 * msNs, atNow: 1000 + marginRun*i},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m margin
			for k, s := range tt.steps {
				switch s.op {
				case "widen":
					assert.Equal(t, s.ok, m.widen(s.atNow, i), "step %d: widen", k)
				case "clean":
					for range s.n {
						m.answered(s.atNow, i)
					}
				case "forget?":
					assert.Equal(t, s.ok, m.forgettable(s.atNow), "step %d: forgettable", k)
				}
				assert.Equal(t, s.at, m.learnt(i), "step %d: margin", k)
			}
		})
	}
}

// keyLearnt returns key's margin in k and whether its adaptive rate is cut.
func keyLearnt(k *Keyed, key string) (m int64, cut bool) {
	e := k.open(clampNow(int64(time.Since(k.epoch))), key, false)
	defer e.close(false)
	if e.st == nil {
		return baseMargin(k.alg.interval()), false
	}
	return e.st.th.margin.learnt(k.alg.interval()), e.st.th.adapt.since != 0
}

// TestKeyedLearnThrottle: which throttles widen the margin and which cut
// the rate (Keyed.Settle). A 429 without a delay (Outcome.Cut) of a request
// that left at its limit's slot (Permit.Track) widens the margin and does
// not cut; one of a request the limit did not hold back cuts; so does a
// throttle on a key with strikes (the probe after the brief pause throttled
// again), and one once the margin is at its top. A throttle stating a
// quota is the server's count, not its clock: no widening. A 429 with
// Retry-After at the slot widens too (no Cut: the pause is the server's).
func TestKeyedLearnThrottle(t *testing.T) {
	throttled := throttle.Outcome{Sent: true, Response: true, Pause: retry.MinThrottlePause, Cut: true}
	for _, tt := range []struct {
		name    string
		prepare func(p *throttle.Permit, o *throttle.Outcome)
		widened bool
		cut     bool
	}{
		{"at the slot", func(*throttle.Permit, *throttle.Outcome) {}, true, false},
		{"Retry-After at the slot", func(_ *throttle.Permit, o *throttle.Outcome) { o.Cut, o.Pause = false, time.Second }, true, false},
		{"not held back", func(p *throttle.Permit, _ *throttle.Outcome) { p.Track, p.State = false, nil }, false, true},
		{"with strikes", func(p *throttle.Permit, _ *throttle.Outcome) { p.Strikes = 1 }, false, true},
		{"stating a quota", func(_ *throttle.Permit, o *throttle.Outcome) {
			o.Quota = throttle.Quota{Remaining: 0, Reset: time.Second}
		}, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k, err := NewKeyed(LeakyBucket(PerSecond(10), LeakyOptions{}), KeyedOptions{})
				require.NoError(t, err)
				ctx := context.Background()
				first, err := k.Wait(ctx, "api", 0)
				require.NoError(t, err)
				k.Settle(first, throttle.Outcome{Sent: true, Response: true})
				p, err := k.Wait(ctx, "api", 0) // held back to its slot: the limit binds
				require.NoError(t, err)
				require.True(t, p.Track, "the limit binds")
				o := throttled
				tt.prepare(&p, &o)
				k.Settle(p, o)
				m, cut := keyLearnt(k, "api")
				if tt.widened {
					assert.Equal(t, 3*msNs, m, "margin doubled")
				} else {
					assert.Equal(t, 1500*1000, int(m), "margin")
				}
				assert.Equal(t, tt.cut, cut, "rate cut")
			})
		})
	}
	t.Run("at the top", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			k, err := NewKeyed(LeakyBucket(PerSecond(10), LeakyOptions{}), KeyedOptions{})
			require.NoError(t, err)
			ctx := context.Background()
			cuts := []bool{}
			for range 4 {
				p, err := k.Wait(ctx, "api", 0)
				require.NoError(t, err)
				k.Settle(p, throttle.Outcome{Sent: true, Response: true})
				p, err = k.Wait(ctx, "api", 0)
				require.NoError(t, err)
				k.Settle(p, throttled)
				_, cut := keyLearnt(k, "api")
				cuts = append(cuts, cut)
				time.Sleep(time.Second) // the pause ends
			}
			assert.Equal(t, []bool{false, false, true, true}, cuts, "1.5 → 3 → 5 ms, then the cut")
		})
	})
}

// TestMarginStopsNginxStyle429: a fake nginx limit_req without burst at
// 10 r/s (https://nginx.org/en/docs/http/ngx_http_limit_req_module.html):
// it refuses, with a 429 that names no delay, an arrival less than 100 ms
// after the last admitted one, on its own clock, which reads 2.5 ms early
// for every 8th arrival (nginx reads its clock once per turn of its event
// loop), so that arrival looks 2.5 ms early, and its answer is not late.
// A client at exactly 10 r/s with the base margin of 1.5 ms meets the
// first such arrival as a 429; the margin widens to 3 ms and no later one
// is refused, and the rate is not cut: 50 calls take about the ideal time.
// With the margin fixed, every such arrival would be refused; with the
// cut answering the first 429, as before, the rest went at 0.7 × the rate.
func TestMarginStopsNginxStyle429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			n        = 50
			interval = 100 * time.Millisecond
			late     = 2500 * time.Microsecond
		)
		var (
			mu       sync.Mutex
			arrivals int
			last     time.Time // the last admitted arrival, on the server's clock
			refused  []int     // arrival numbers refused
		)
		base := testhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.WroteRequest != nil {
				tr.WroteRequest(httptrace.WroteRequestInfo{}) // as net/http does once the request is written
			}
			mu.Lock()
			defer mu.Unlock()
			arrivals++
			stamp := time.Now()
			if arrivals%7 == 1 && arrivals > 1 {
				stamp = stamp.Add(-late)
			}
			if !last.IsZero() && stamp.Sub(last) < interval {
				refused = append(refused, arrivals)
				return testhttp.Response(http.StatusTooManyRequests), nil
			}
			last = stamp
			return testhttp.Response(http.StatusOK), nil
		})
		tr := &Transport{Base: base, Limits: Hosts{"*": {Limit: LeakyBucket(PerSecond(10), LeakyOptions{Queue: 100})}}}
		jobs := make(chan int, n)
		for i := range n {
			jobs <- i
		}
		close(jobs)
		start := time.Now()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range jobs {
					req, _ := http.NewRequest(http.MethodGet, "http://nginx.test/", nil)
					resp, err := tr.RoundTrip(req)
					if assert.NoError(t, err) {
						assert.Equal(t, http.StatusOK, resp.StatusCode)
						resp.Body.Close()
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		admitted := arrivals - len(refused)
		ideal := time.Duration(admitted-1) * interval
		t.Logf("%d admitted, refused arrivals %v, elapsed %v = %.3f × ideal", admitted, refused, elapsed, float64(elapsed)/float64(ideal))
		assert.Len(t, refused, 1, "429s: only the first early-looking arrival")
		// Each gap is the interval and the margin (3 ms after the first
		// 429), plus the 429's brief pause and its retry's slot.
		assert.LessOrEqual(t, elapsed, ideal*103/100+retry.MinThrottlePause+interval, "elapsed")
		for _, st := range tr.Stats() {
			assert.NotEqual(t, "adaptive", st.PaceSource, "the rate was not cut")
		}
	})
}

// TestMarginAnswer: margin.answer on explicit round trips: the excess over
// the quickest answer of this run of quickest.Run answers and the one before,
// capped at twice maxMargin (quickest.Cap).
func TestMarginAnswer(t *testing.T) {
	const i = 100 * msNs // 10/s: maxMargin 5 ms
	var m margin
	assert.Zero(t, m.answer(300_000, i), "the first answer is the quickest")
	assert.Equal(t, int64(3_000_000), m.answer(3_300_000, i), "3 ms late")
	assert.Equal(t, 8*msNs, m.answer(8300_000, i), "8 ms late: beyond maxMargin, within the cap")
	assert.Equal(t, 10*msNs, m.answer(20*msNs, i), "capped at twice maxMargin")
	assert.Zero(t, m.answer(200_000, i), "a quicker one")
	assert.Equal(t, int64(100_000), m.answer(300_000, i))
	assert.Zero(t, m.answer(-1, i), "a clock that went back: nothing")
	for range 2 * quickest.Run { // two whole runs of slower answers: the old quickest is forgotten
		m.answer(1*msNs, i)
	}
	assert.Equal(t, int64(500_000), m.answer(1500_000, i), "the quickest of the latest runs")
}

// TestAnswerLateCountsLate: a fake nginx limit_req without burst at 10 r/s
// whose worker gets to some requests late (it was not scheduled), stamping
// each then, and answering then: the answer shows the delay, so the
// request counts from when the server saw it, and the next one leaves late
// enough. No 429, and no widened margin. Every 5th 3 ms late: with only the
// departure margin (1.5 ms), the first one's successor was refused. Every
// 10th 8 ms late, more than the widest margin (5 ms) and within
// quickest.Cap (10 ms): with lateness capped at the widest margin, as
// before, the first one's successor was refused.
func TestAnswerLateCountsLate(t *testing.T) {
	for _, c := range []struct {
		every int
		late  time.Duration
	}{{5, 3 * time.Millisecond}, {10, 8 * time.Millisecond}} {
		t.Run(fmt.Sprintf("every %dth %v late", c.every, c.late), func(t *testing.T) {
			answerLateCountsLate(t, c.every, c.late)
		})
	}
}

func answerLateCountsLate(t *testing.T, every int, late time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		const (
			n        = 50
			interval = 100 * time.Millisecond
		)
		var (
			mu       sync.Mutex
			arrivals int
			last     time.Time
			refused  int
		)
		base := testhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.WroteRequest != nil {
				tr.WroteRequest(httptrace.WroteRequestInfo{})
			}
			mu.Lock()
			arrivals++
			slow := arrivals%every == 0
			mu.Unlock()
			if slow {
				time.Sleep(late)
			}
			mu.Lock()
			defer mu.Unlock()
			if stamp := time.Now(); last.IsZero() || stamp.Sub(last) >= interval {
				last = stamp
				return testhttp.Response(http.StatusOK), nil
			}
			refused++
			return testhttp.Response(http.StatusTooManyRequests), nil
		})
		k, err := NewKeyed(LeakyBucket(PerSecond(10), LeakyOptions{Queue: 100}), KeyedOptions{})
		require.NoError(t, err)
		tr := &Transport{Base: base, Limiter: k}
		start := time.Now()
		var wg sync.WaitGroup
		jobs := make(chan int, n)
		for i := range n {
			jobs <- i
		}
		close(jobs)
		for range 4 {
			wg.Go(func() {
				for range jobs {
					req, _ := http.NewRequest(http.MethodGet, "http://nginx.test/", nil)
					resp, err := tr.RoundTrip(req)
					if assert.NoError(t, err) {
						resp.Body.Close()
					}
				}
			})
		}
		wg.Wait()
		elapsed, ideal := time.Since(start), time.Duration(n-1)*interval
		t.Logf("%d arrivals, %d × 429, elapsed %.3f × ideal", arrivals, refused, float64(elapsed)/float64(ideal))
		assert.Zero(t, refused, "429s")
		m, cut := keyLearnt(k, "nginx.test")
		assert.Equal(t, baseMargin(int64(interval)), m, "margin not widened")
		assert.False(t, cut)
		assert.LessOrEqual(t, elapsed, ideal*103/100, "elapsed")
	})
}
