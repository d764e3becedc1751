package redislimit

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grantWanted grants what a renewal asks for (all of units for -1), for
// a lease of lease + lead, as lease.lua does for a process alone.
func grantWanted(units int64, lease time.Duration) func(leaseReq) (leaseReply, error) {
	return func(q leaseReq) (leaseReply, error) {
		g := units
		if q.want >= 0 && q.want < units {
			g = q.want
		}
		return leaseReply{grant: g, lease: lease}, nil
	}
}

// TestLeaseShrinkReportsWholeClaim: a key used at 4/s of a share of 10/s
// shrinks its share to its demand (6 units) before the renewal that asks
// for it is sent, and, its window holding fewer than 6, reports the
// smaller share as its whole claim (no hold): lease.lua frees the rest
// for the other processes at once. From then on the share's window holds
// 6 at most.
func TestLeaseShrinkReportsWholeClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: grantWanted(10, 1125*time.Millisecond)}
		ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(10)), time.Second, f)
		defer ls.close()
		useLightly(t, ls, "k")
		var shrunk *leaseReq
		f.mu.Lock()
		for i := range f.reqs {
			if f.reqs[i].shrunk {
				shrunk = &f.reqs[i]
				break
			}
		}
		f.mu.Unlock()
		require.NotNil(t, shrunk, "a renewal reported a shrunk share")
		assert.Equal(t, int64(6), shrunk.want)
		assert.Equal(t, int64(6), shrunk.grant, "the share it shrank to")
		assert.Zero(t, shrunk.hold, "its window held fewer than 6: nothing more to claim")
		g := ls.cur("k")
		assert.Equal(t, int64(6), g.share)
		assert.Equal(t, 6, g.shaper.QuotaAt(time.Now()).Limit, "its window admits 6 from now on")
	})
}

// cur returns the grant of key's share (nil: none).
func (ls *leaser) cur(key string) *leaseGrant {
	v, ok := ls.keys.Load(key)
	if !ok {
		return nil
	}
	return v.(*leaseKey).cur.Load()
}

// shrinkCase runs shrinkLocked on a key holding a share of 10 units of
// l for the lease ahead, of which used were admitted just now, for a
// renewal asking for want units.
func shrinkCase(t *testing.T, l pace.Limit, used int, want int64) (*leaser, *leaseKey, renewal, time.Time) {
	t.Helper()
	f := &fakeShares{grant: grantAll(10, 1125*time.Millisecond)}
	ls := newTestLeaser(t, l, time.Second, f)
	k, err := ls.entry("k")
	require.NoError(t, err)
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	g := &leaseGrant{share: 10, until: now.Add(1125 * time.Millisecond), received: true}
	g.shaper, g.pacer = ls.shareLocked(k, 10, now)
	require.NotNil(t, g.shaper)
	k.cur.Store(g)
	for range used {
		require.True(t, g.shaper.AllowAt(now, 1))
	}
	rn := renewal{q: leaseReq{want: want, grant: 10, rest: 1125 * time.Millisecond}, swapped: true}
	ls.shrinkLocked(k, g, &rn, now)
	return ls, k, rn, now
}

// TestLeaseShrinkFullWindow: a share whose window holds as many as the
// demand or more shrinks too, and reports what it admitted as a claim of
// the whole old share until a span after its latest entry, no longer: a
// sliding log's entry counts a span from where it lies.
func TestLeaseShrinkFullWindow(t *testing.T) {
	ls, k, rn, now := shrinkCase(t, pace.SlidingLog(pace.PerSecond(100)), 8, 5)
	assert.True(t, rn.q.shrunk)
	assert.Equal(t, int64(5), rn.q.grant)
	assert.Equal(t, int64(10), rn.q.hold, "what it admitted under the share it held")
	assert.Equal(t, ls.span, rn.q.holdRest, "a span from its latest entry, now")
	assert.Equal(t, int64(5), k.cur.Load().share)
	assert.False(t, k.cur.Load().shaper.AllowAt(now, 1), "the window holds 8 of the 5 it keeps to")
}

// TestLeaseShrinkKeepsClaimOtherwise: with two parts (a sliding log of
// 100/s and one of 1000/min), a full window is not read entry by entry:
// the share shrinks here, but reports the grant it held, as a renewal
// that does not shrink does. A token bucket's share does not shrink
// before its renewal.
func TestLeaseShrinkKeepsClaimOtherwise(t *testing.T) {
	_, k, rn, _ := shrinkCase(t, pace.All(pace.SlidingLog(pace.PerSecond(100)), pace.SlidingLog(pace.PerMinute(1000))), 8, 5)
	assert.False(t, rn.q.shrunk)
	assert.Equal(t, int64(10), rn.q.grant)
	assert.Equal(t, int64(5), k.cur.Load().share, "it keeps to the smaller share at once")

	_, k, rn, _ = shrinkCase(t, pace.TokenBucket(pace.PerSecond(100), 100), 2, 5)
	assert.False(t, rn.q.shrunk)
	assert.Equal(t, int64(10), rn.q.grant)
	assert.Equal(t, int64(10), k.cur.Load().share)
}

// TestLeaseWaitWakesOnGrowth: Waits sleeping for units booked on a share
// of 2 (a window ahead) book again when a renewal grows the share, and
// pass then, not a window later.
func TestLeaseWaitWakesOnGrowth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeShares{grant: func(leaseReq) (leaseReply, error) {
			return leaseReply{grant: 2, lease: 1125 * time.Millisecond, retry: 300 * time.Millisecond}, nil
		}}
		ls := newTestLeaser(t, pace.SlidingLog(pace.PerSecond(10)), time.Second, f)
		defer ls.close()
		ctx := context.Background()
		start := time.Now()
		for range 2 {
			_, err := ls.wait(ctx, "k", 0)
			require.NoError(t, err)
		}
		f.set(grantAll(10, 1125*time.Millisecond))
		var wg sync.WaitGroup
		took := make([]time.Duration, 3)
		for i := range took {
			wg.Go(func() {
				_, err := ls.wait(ctx, "k", 0)
				assert.NoError(t, err)
				took[i] = time.Since(start)
			})
		}
		wg.Wait()
		for _, d := range took {
			assert.Equal(t, 300*time.Millisecond, d, "at the renewal that grew the share")
		}
	})
}
