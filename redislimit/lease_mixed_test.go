package redislimit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseShareMixedLease: a process with a longer Lease (8 s) holds 2
// units; one with a 1 s Lease gets the rest, not nothing: the other's
// lease ends later than its own would, and is still in range. A lease
// ending beyond the longest any Limiter may hold counts as the whole
// limit.
func TestLeaseShareMixedLease(t *testing.T) {
	_, rdb := startRedis(t)
	keys := []string{shKeysS, "lease:{k}:p", "lease:{k}:l"}
	long := micros(8 * time.Second)
	r, err := runLease(context.Background(), rdb, keys, "long", leaseReq{want: 2}, shU, long, long/8, shSpan, shT0, shUp)
	require.NoError(t, err)
	require.Equal(t, int64(2), r.grant)
	b := &shareClient{id: "short"}
	assert.Equal(t, int64(shU-2), renewAt(t, rdb, b, -1, shT0+1000, shUp).grant, "all but the other's 2 units")

	far := shT0 + micros(maxLeaseRun) + 2000 + 1
	require.NoError(t, rdb.HSet(context.Background(), shKeysS, "long", "2 "+strconv.FormatInt(far, 10)+" 0 0 2").Err())
	assert.Zero(t, renewAt(t, rdb, b, -1, shT0+2000, shUp).grant, "a lease out of range counts as the whole limit")
}

// TestLeaseMixedLease: two Limiters on one Prefix with Leases of 4 s and
// 1 s; the first wants about 2/s, the second all it can get. The first
// takes the whole limit of 10/s at first (its first renewal asks for
// all); once that claim ends, the second gets the rest of the limit.
func TestLeaseMixedLease(t *testing.T) {
	_, rdb := startRedis(t)
	notFresh(t, rdb, "mixed:", "k")
	l := pace.SlidingLog(pace.PerSecond(10))
	a := newLimiter(t, rdb, l, Options{Prefix: "mixed:", Lease: 4 * time.Second})
	b := newLimiter(t, rdb, l, Options{Prefix: "mixed:", Lease: time.Second})
	ctx := waitCtx(t, 9*time.Second)
	run := func(lim *Limiter, every time.Duration, done chan<- int) {
		n := 0
		for ctx.Err() == nil {
			p, err := lim.Wait(ctx, "k", 0)
			if err == nil {
				n++
				lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
			}
			if every > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(every):
				}
			}
		}
		done <- n
	}
	da, db := make(chan int), make(chan int)
	go run(a, 500*time.Millisecond, da)
	go run(b, 0, db)
	na, nb := <-da, <-db
	t.Logf("in 9 s: %d (4 s Lease) and %d (1 s Lease) admitted", na, nb)
	assert.GreaterOrEqual(t, nb, 12, "the shorter Lease gets the rest once the first claim ended")
}
