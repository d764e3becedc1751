package redislimit

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFallbackWithinLimit: 4 processes (a client and a Limiter each)
// share 50/s, each with a Fallback of its share, 12.5/s, while Redis is
// killed for 3 s and started again, empty. Before, the Fallbacks started
// full and a Redis back from the outage knew nothing of what they had
// admitted: 70–73 admissions in one second against 50 (pacehttp/pace#19).
// Now the Fallback books every decision Redis makes, so it starts from
// what its process just used, and for a window after the Fallback last
// decided, decisions on Redis keep to the Fallback's pace too: no second
// holds more than 50 admissions.
func TestFallbackWithinLimit(t *testing.T) {
	srv, _ := startRedis(t)
	const limit = 50
	ctx, cancel := context.WithCancel(context.Background())
	var a admissions
	for range 4 {
		rdb := newClient(t, srv.Addr())
		a.run(ctx, newLimiter(t, rdb, pace.SlidingLog(pace.PerSecond(limit)), Options{
			Fallback: pace.SlidingLog(pace.PerSecond(limit / 4)), // 12/s
		}), 2)
	}
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, srv.Kill())
	killed := time.Now()
	time.Sleep(3 * time.Second)
	require.NoError(t, srv.Restart())
	back := time.Now()
	time.Sleep(2500 * time.Millisecond)
	cancel()
	times, fell := a.wait()
	worst, at := mostInWindow(times, time.Second)
	t0 := times[0]
	t.Logf("%d admissions (%d by the Fallbacks) in %v; Redis killed at %v, back at %v; at most %d in one second, from %v",
		len(times), fell, times[len(times)-1].Sub(t0).Round(time.Millisecond), killed.Sub(t0).Round(time.Millisecond),
		back.Sub(t0).Round(time.Millisecond), worst, at.Sub(t0).Round(time.Millisecond))
	assert.Positive(t, fell, "the Fallbacks decided while Redis was gone")
	assert.LessOrEqual(t, worst, limit, "admissions in one second")
}

// mostInWindow sorts times and returns the most of them within any
// window of w, and where the first such window starts.
func mostInWindow(times []time.Time, w time.Duration) (int, time.Time) {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	most, at := 0, time.Time{}
	for i, j := 0, 0; j < len(times); j++ {
		for times[j].Sub(times[i]) >= w {
			i++
		}
		if j-i+1 > most {
			most, at = j-i+1, times[i]
		}
	}
	return most, at
}

// TestStrictAfterFallbackAdmits: decisions on Redis keep to the
// Fallback's pace for the Limit's longest span after the Fallback's last
// admission, not after its last decision. A Fallback decision can wait
// long for its slot (here 1 s), and its request can leave later still; a
// Redis back from an outage knows of neither. Before, the strict window
// ran from the decision: in a SIGSTOP fault one client admitted 15 in
// under a second against a Fallback of 12/s, and the fleet 51 of 50.
func TestStrictAfterFallbackAdmits(t *testing.T) {
	srv, _ := startRedis(t)
	// fallBack makes n Waits on Redis while it is killed, which the
	// Fallback (2 in a second) admits, and starts Redis again.
	fallBack := func(t *testing.T, lim *Limiter, fell <-chan string, n int) []throttle.Permit {
		require.NoError(t, srv.Kill())
		ps := make([]throttle.Permit, n)
		var wg sync.WaitGroup
		for i := range ps {
			wg.Go(func() {
				p, err := lim.Wait(waitCtx(t, 10*time.Second), "k", 0)
				assert.NoError(t, err)
				assert.NotZero(t, p.Gen&fallbackBit, "decided by the Fallback")
				ps[i] = p
			})
		}
		for range n {
			<-fell // each Wait has failed on Redis
		}
		require.NoError(t, srv.Restart())
		wg.Wait()
		return ps
	}
	onRedis := func(t *testing.T, lim *Limiter) throttle.Permit {
		p, err := lim.Wait(waitCtx(t, 10*time.Second), "k", 0)
		require.NoError(t, err)
		require.Zero(t, p.Gen&fallbackBit, "decided on Redis")
		return p
	}
	newLim := func(t *testing.T, lease time.Duration) (*Limiter, <-chan string) {
		fell := make(chan string, 8)
		return newLimiter(t, newClient(t, srv.Addr()), pace.SlidingLog(pace.PerSecond(100)), Options{
			Prefix: t.Name() + ":", Fallback: pace.SlidingLog(pace.PerSecond(2)), Lease: lease,
			OnFallback: func(key string, _ error) { fell <- key },
		}), fell
	}
	t.Run("slot", func(t *testing.T) {
		lim, fell := newLim(t, 0)
		fallBack(t, lim, fell, 4) // 2 at once, 2 a second later
		// The last two were admitted 300 ms ago, 1.3 s after the Fallback
		// decided: its next slot is 700 ms away, and Redis, knowing nothing
		// of them, would admit at once.
		time.Sleep(300 * time.Millisecond)
		p := onRedis(t, lim)
		assert.Greater(t, p.Delay, 400*time.Millisecond, "kept to the Fallback's pace")
	})
	t.Run("departure", func(t *testing.T) {
		lim, fell := newLim(t, 0)
		ps := fallBack(t, lim, fell, 2) // both at once
		time.Sleep(600 * time.Millisecond)
		left := time.Now()
		for _, p := range ps {
			lim.Depart(p, left)
		}
		// A second after the slots, 400 ms before a second after the
		// requests left.
		time.Sleep(time.Until(left.Add(600 * time.Millisecond)))
		p := onRedis(t, lim)
		assert.Greater(t, p.Delay, 200*time.Millisecond, "kept to the Fallback's pace")
	})
}

// TestLeaseFallbackWithinLimit: one process holds a leased share of a
// sliding log of 20/s, with a Fallback of 5/s, while redis-server is
// stopped (SIGSTOP) for 3 s and continued. Its state is intact, but it
// knows nothing of what the Fallback admitted. Before, with Lease the
// Limiter had no strict span at all (the shares held the Limit, so its
// longest span read 0): the first share added 20 to the Fallback's
// admissions, 22 in one second. Now leased decisions keep to the
// Fallback's pace as decisions on Redis do: no second holds more than 20.
func TestLeaseFallbackWithinLimit(t *testing.T) {
	srv, _ := startRedis(t)
	const limit = 20
	lim := newLimiter(t, newClient(t, srv.Addr()), pace.SlidingLog(pace.PerSecond(limit)), Options{
		Lease: time.Second, Fallback: pace.SlidingLog(pace.PerSecond(5)),
	})
	ctx, cancel := context.WithCancel(context.Background())
	var a admissions
	a.run(ctx, lim, 2)
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, srv.Suspend())
	time.Sleep(3 * time.Second)
	require.NoError(t, srv.Resume())
	time.Sleep(3 * time.Second)
	cancel()
	times, fell := a.wait()
	worst, at := mostInWindow(times, time.Second)
	t.Logf("%d admissions (%d by the Fallback); at most %d in one second, from %v",
		len(times), fell, worst, at.Sub(times[0]).Round(time.Millisecond))
	assert.Positive(t, fell, "the Fallback decided while Redis was stopped")
	assert.LessOrEqual(t, worst, limit, "admissions in one second")
}

// admissions counts what Waits in a loop admit, each departed and settled
// at once, and how many of them the Fallback decided.
type admissions struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	times []time.Time
	fell  int
}

// run starts goroutines loops of Wait on lim's key "k" until ctx ends.
func (a *admissions) run(ctx context.Context, lim *Limiter, goroutines int) {
	for range goroutines {
		a.wg.Go(func() {
			for ctx.Err() == nil {
				p, err := lim.Wait(ctx, "k", 0)
				if err != nil {
					continue
				}
				now := time.Now()
				lim.Depart(p, now)
				lim.Settle(p, throttle.Outcome{Sent: true, Response: true, At: now})
				a.mu.Lock()
				a.times = append(a.times, now)
				if p.Gen&fallbackBit != 0 {
					a.fell++
				}
				a.mu.Unlock()
			}
		})
	}
}

// wait waits for the loops to end and returns the admissions' instants and
// how many the Fallback decided.
func (a *admissions) wait() ([]time.Time, int) {
	a.wg.Wait()
	return a.times, a.fell
}
