package redislimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeShares stands for lease.lua in a synctest bubble: it grants what
// grant returns, or fails with fail, and records each request.
type fakeShares struct {
	mu    sync.Mutex
	reqs  []leaseReq
	at    []time.Time
	tags  []string
	grant func(q leaseReq) (leaseReply, error)
}

func (f *fakeShares) renew(_ context.Context, tag string, q leaseReq) (leaseReply, error) {
	f.mu.Lock()
	f.tags = append(f.tags, tag)
	f.reqs = append(f.reqs, q)
	f.at = append(f.at, time.Now())
	g := f.grant
	f.mu.Unlock()
	return g(q)
}

func (f *fakeShares) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func (f *fakeShares) last() leaseReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1]
}

func (f *fakeShares) set(g func(q leaseReq) (leaseReply, error)) {
	f.mu.Lock()
	f.grant = g
	f.mu.Unlock()
}

// grantAll grants units for a lease of lease + lead.
func grantAll(units int64, lease time.Duration) func(leaseReq) (leaseReply, error) {
	return func(leaseReq) (leaseReply, error) { return leaseReply{grant: units, lease: lease}, nil }
}

// newTestLeaser returns a leaser of l with Options.Lease lease, renewing
// through f, with no Redis: for synctest bubbles.
func newTestLeaser(t *testing.T, l pace.Limit, lease time.Duration, f *fakeShares) *leaser {
	t.Helper()
	parts, err := convert(l, 0)
	require.NoError(t, err)
	lim := &Limiter{}
	lim.dl.init(DefaultTimeout)
	ls, err := newLeaser(l, parts, Options{Lease: lease}, DefaultTimeout, 0)
	require.NoError(t, err)
	ls.l, lim.ls = lim, ls
	ls.renew = f.renew
	return ls
}

// TestLeaseWaitLocal: the first Wait of a key waits for its first share;
// then ten Waits of a share of 10/s pass at once, the eleventh waits for
// the window; over ten leases of steady use, one renewal a lease.
func TestLeaseWaitLocal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: grantAll(10, 1125*time.Millisecond)}
		ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(10)), time.Second, f)
		defer ls.close()
		ctx := context.Background()
		start := time.Now()
		for range 10 {
			_, err := ls.wait(ctx, "k", 0)
			require.NoError(t, err)
		}
		assert.Equal(t, time.Duration(0), time.Since(start), "the first share took no time (a fake Redis)")
		assert.Equal(t, 1, f.count())
		p, err := ls.wait(ctx, "k", 0)
		require.NoError(t, err)
		assert.Equal(t, time.Second, time.Since(start), "the eleventh waits a window")
		assert.Equal(t, time.Second, p.Delay)
		for time.Since(start) < 10*time.Second { // steady use within the share
			_, err := ls.wait(ctx, "k", 0)
			require.NoError(t, err)
			time.Sleep(150 * time.Millisecond)
		}
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, 11, f.count(), "one renewal a lease")
	})
}

// useLightly waits once for key, then 4 times a second for 3 s, between
// the halves of the leases: a demand of 4 × 17/16 + 2 = 6 units.
func useLightly(t *testing.T, ls *leaser, key string) {
	t.Helper()
	_, err := ls.wait(context.Background(), key, 0)
	require.NoError(t, err)
	time.Sleep(125 * time.Millisecond)
	for range 12 {
		_, err := ls.wait(context.Background(), key, 0)
		require.NoError(t, err)
		time.Sleep(time.Second / 4)
	}
}

// TestLeaseWaitDemand: a key used at 4/s of a share of 10/s asks for what
// it used in the second half of its lease and a little more (4 × 17/16 +
// 2 = 6 units); one whose Waits found its share spent asks for twice
// what it holds, up to the limit (10), or sends its first ask (-1) again
// until half a lease has passed since it was measured.
func TestLeaseWaitDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: grantAll(10, 1125*time.Millisecond)}
		ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(10)), time.Second, f)
		defer ls.close()
		ctx := context.Background()
		useLightly(t, ls, "light")
		f.mu.Lock()
		first := f.reqs[0].want
		f.mu.Unlock()
		assert.Equal(t, int64(-1), first, "the first asks for all")
		assert.Equal(t, int64(6), f.last().want)
		assert.Equal(t, int64(6), f.last().grant, "it reports the share it shrank to before it asked (shrinkLocked)")
		assert.True(t, f.last().shrunk)
		var wg sync.WaitGroup
		for range 4 { // four goroutines wanting more than the share
			wg.Go(func() {
				for range 10 {
					_, err := ls.wait(ctx, "heavy", 0)
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		var heavy []int64
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, q := range f.reqs {
			if f.tags[i] == "heavy" {
				heavy = append(heavy, q.want)
			}
		}
		require.Greater(t, len(heavy), 2)
		for _, w := range heavy[1:] { // a renewal within half a lease of the last measured one sends its demand again
			assert.Contains(t, []int64{-1, 10}, w, "its renewals while it waited: its first ask again, or twice its share, up to the limit (TestLeaseDemandSpent)")
		}
	})
}

// TestLeaseWaitOutage: when renewals fail, the share is spent until its
// lease ends (1 s + lead, from before the last renewal that answered);
// then Wait fails closed with ErrUnavailable, at once; when Redis answers
// again, Waits pass again.
func TestLeaseWaitOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 1125 * time.Millisecond
		f := &fakeShares{grant: grantAll(100, lease)}
		ls := newTestLeaser(t, pace.TokenBucket(pace.PerSecond(100), 10), time.Second, f)
		defer ls.close()
		ctx := context.Background()
		_, err := ls.wait(ctx, "k", 0)
		require.NoError(t, err)
		start := time.Now()
		f.set(func(leaseReq) (leaseReply, error) { return leaseReply{}, errors.New("connection refused") })
		for time.Since(start) < lease {
			_, err := ls.wait(ctx, "k", 0)
			require.NoError(t, err, "at %v", time.Since(start))
			time.Sleep(10 * time.Millisecond)
		}
		_, err = ls.wait(ctx, "k", 0)
		require.ErrorIs(t, err, ErrUnavailable)
		assert.Greater(t, f.count(), 2, "it kept trying")
		f.set(grantAll(100, lease))
		time.Sleep(probePoll)
		_, err = ls.wait(ctx, "k", 0)
		require.NoError(t, err)
	})
}

// TestLeaseWaitNoShare: a key granted nothing waits for the renewal the
// reply asks for, within maxWait: a shorter maxWait is refused at once
// with ErrWaitTooLong, naming the wait.
func TestLeaseWaitNoShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: func(leaseReq) (leaseReply, error) {
			return leaseReply{lease: 1125 * time.Millisecond, retry: 300 * time.Millisecond}, nil
		}}
		ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(10)), time.Second, f)
		defer ls.close()
		ctx := context.Background()
		start := time.Now()
		_, err := ls.wait(ctx, "k", 100*time.Millisecond)
		require.ErrorIs(t, err, pace.ErrWaitTooLong)
		assert.Equal(t, time.Duration(0), time.Since(start))
		var we *pace.WaitError
		require.ErrorAs(t, err, &we)
		assert.Equal(t, 300*time.Millisecond, we.Delay)
		f.set(grantAll(10, 1125*time.Millisecond))
		_, err = ls.wait(ctx, "k", 0)
		require.NoError(t, err)
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "at the retry the reply asked for")
	})
}

// TestLeaseWaitIdleDropped: a key no Wait used for a whole lease is not
// renewed; its entry is dropped when its lease ends, and a later Wait
// starts a new one.
func TestLeaseWaitIdleDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: grantAll(10, 1125*time.Millisecond)}
		ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(10)), time.Second, f)
		defer ls.close()
		_, err := ls.wait(context.Background(), "k", 0)
		require.NoError(t, err)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, int64(0), ls.n.Load(), "dropped")
		assert.Equal(t, 1, f.count(), "not renewed: no Wait came during its lease")
		_, err = ls.wait(context.Background(), "k", 0)
		require.NoError(t, err)
		assert.Equal(t, int64(1), ls.n.Load())
	})
}

// TestLeaseWaitLateDeparture: a request that left later than its
// admission (beyond the margin, none here) counts once more in the share,
// where it left: of a share of 10/s, 9 admitted and one of them written
// 100 ms late leave no unit free, so the next Wait waits until the first
// nine leave the window. Without the late departure it would pass at once.
func TestLeaseWaitLateDeparture(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: grantAll(10, 1125*time.Millisecond)}
		ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(10)), time.Second, f)
		defer ls.close()
		ctx := context.Background()
		var first throttle.Permit
		for i := range 9 {
			p, err := ls.wait(ctx, "k", 0)
			require.NoError(t, err)
			assert.True(t, p.Track)
			if i == 0 {
				first = p
			}
		}
		time.Sleep(100 * time.Millisecond)
		ls.l.Depart(first, time.Now())
		start := time.Now()
		_, err := ls.wait(ctx, "k", 0)
		require.NoError(t, err)
		assert.Equal(t, 900*time.Millisecond, time.Since(start), "until the window of the first nine ends")
	})
}

// TestLeaseWaitIdleDuringOutage: a key whose renewals fail and that no
// Wait uses stops trying when its lease ends, and is dropped: an outage
// does not keep every idle key asking Redis ten times a second.
func TestLeaseWaitIdleDuringOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: grantAll(10, 1125*time.Millisecond)}
		ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(10)), time.Second, f)
		defer ls.close()
		_, err := ls.wait(context.Background(), "k", 0)
		require.NoError(t, err)
		f.set(func(leaseReq) (leaseReply, error) { return leaseReply{}, errors.New("connection refused") })
		time.Sleep(900 * time.Millisecond)
		_, err = ls.wait(context.Background(), "k", 0) // used in this lease: renewed at 1 s, and tried again
		require.NoError(t, err)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, int64(0), ls.n.Load(), "dropped")
		tries := f.count()
		assert.Less(t, tries, 15, "tried every 100 ms until the lease ended, no longer")
		time.Sleep(5 * time.Second)
		assert.Equal(t, tries, f.count())
	})
}

// TestLeaseDemandSpent: a key whose share was spent asks for what it used
// and what its Waits asked for beyond it, at least twice its share, up to
// the limit; only one holding nothing asks for all it can get (-1). A
// key at 12/s short of its share of 8 asked for all before, and lease.lua
// gave it a proportional share of the whole limit (46 of 120 beside a key
// wanting 84/s) for a lease.
func TestLeaseDemandSpent(t *testing.T) {
	ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(120)), time.Second, &fakeShares{})
	defer ls.close()
	k := &leaseKey{}
	now := time.Now()
	half := 500 * time.Millisecond
	assert.Equal(t, int64(8*17/16+2), ls.demand(k, 4, 0, half, now, 8), "used 8/s: a sixteenth and two more")
	k.waiting.Store(1) // a Wait waits for a unit now
	assert.Equal(t, int64(16), ls.demand(k, 4, 2, half, now, 8), "asked for 12/s, holds 8: twice that")
	assert.Equal(t, int64(20*17/16+2), ls.demand(k, 4, 6, half, now, 8), "asked for 20/s")
	assert.Equal(t, int64(120), ls.demand(k, 40, 40, half, now, 90), "never more than the limit")
	assert.Equal(t, int64(-1), ls.demand(k, 0, 3, half, now, 0), "holding nothing: all it can get")
	k.waiting.Store(0)
	k.wanted.Store(now.UnixNano()) // a Wait found the share spent just now
	assert.Equal(t, int64(16), ls.demand(k, 4, 1, half, now, 8), "found spent once in 4, recently")
}
