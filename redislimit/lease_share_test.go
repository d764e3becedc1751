package redislimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The share arithmetic of lease.lua, run in a real redis-server on an
// explicit clock (now and uptime passed in, µs): no sleeps.
const (
	shU     = 120       // units: the Limit's Rate.N
	shL     = 1_000_000 // the lease, µs
	shLead  = 125_000   // how much longer than the lease a grant lasts
	shSpan  = 1_050_000 // the limit's span
	shLife  = shL + shLead + shSpan
	shT0    = 1_000_000_000_000 // an instant on the test's clock
	shUp    = 3_600_000_000     // an uptime longer than any claim
	shKeysS = "lease:{k}:s"
)

// shareClient is one process as the script sees it: what it reports and
// what it was granted.
type shareClient struct {
	id   string
	u    int64 // U; 0: shU
	last leaseReply
	at   int64 // when last was granted (µs), 0: never
}

// req returns what the client reports at now: its grant and claim, with
// their rests.
func (c *shareClient) req(want, now int64) leaseReq {
	q := leaseReq{want: want}
	if c.at == 0 {
		return q
	}
	if end := c.at + int64(c.last.lease/time.Microsecond); end > now {
		q.grant, q.rest = c.last.grant, time.Duration(end-now)*time.Microsecond
	}
	if end := c.at + int64(c.last.holdRest/time.Microsecond); end > now {
		q.hold, q.holdRest = c.last.hold, time.Duration(end-now)*time.Microsecond
	}
	return q
}

func renewAt(t *testing.T, rdb redis.Scripter, c *shareClient, want, now, up int64) leaseReply {
	t.Helper()
	return renewQ(t, rdb, c, c.req(want, now), now, up)
}

func renewQ(t *testing.T, rdb redis.Scripter, c *shareClient, q leaseReq, now, up int64) leaseReply {
	t.Helper()
	u := c.u
	if u == 0 {
		u = shU
	}
	r, err := runLease(context.Background(), rdb, []string{shKeysS, "lease:{k}:p", "lease:{k}:l"}, c.id, q, u, shL, shLead, shSpan, now, up)
	require.NoError(t, err)
	c.last, c.at = r, now
	return r
}

// TestLeaseShareNewcomer: a process alone gets all it asks for; a
// newcomer gets nothing while the first holds the whole limit, and is
// told to ask again when that claim could end; the first, renewing,
// shrinks to an equal share but keeps its old claim until its old lease's
// end plus the span; the newcomer then gets the other half.
func TestLeaseShareNewcomer(t *testing.T) {
	_, rdb := startRedis(t)
	a, b := &shareClient{id: "a"}, &shareClient{id: "b"}
	now := int64(shT0)
	r := renewAt(t, rdb, a, -1, now, shUp)
	assert.Equal(t, int64(shU), r.grant)
	assert.Equal(t, time.Duration(shL+shLead)*time.Microsecond, r.lease)

	now += 100_000
	r = renewAt(t, rdb, b, -1, now, shUp)
	assert.Zero(t, r.grant, "the whole limit is a's")
	assert.Equal(t, time.Duration(shT0+shL+shLead+shSpan-now)*time.Microsecond, r.retry, "ask again when a's claim could end")

	now = shT0 + shL // a renews at the end of its renewal period
	r = renewAt(t, rdb, a, -1, now, shUp)
	assert.Equal(t, int64(shU/2), r.grant, "an equal share of two")
	assert.Equal(t, int64(shU), r.hold, "the old grant is still claimed")
	assert.Equal(t, time.Duration(shT0+shL+shLead+shSpan-now)*time.Microsecond, r.holdRest)

	now = shT0 + shL + shLead + shSpan - 1
	r = renewAt(t, rdb, b, -1, now, shUp)
	assert.Zero(t, r.grant, "a microsecond before a's old claim ends")
	now++
	r = renewAt(t, rdb, b, -1, now, shUp)
	assert.Equal(t, int64(shU/2), r.grant)
}

// TestLeaseShareProportional: Doorman's proportional share. Three
// processes wanting 14 units each get them; the fourth, wanting all,
// gets the rest (120 − 42 = 78); with all four wanting all, each gets 30.
func TestLeaseShareProportional(t *testing.T) {
	_, rdb := startRedis(t)
	cs := []*shareClient{{id: "p0"}, {id: "p1"}, {id: "p2"}, {id: "p3"}}
	now := int64(shT0)
	for _, c := range cs[1:] {
		r := renewAt(t, rdb, c, 14, now, shUp)
		assert.Equal(t, int64(14), r.grant)
	}
	r := renewAt(t, rdb, cs[0], -1, now, shUp)
	assert.Equal(t, int64(shU-3*14), r.grant)

	// All want all, renewing each lease: the three grow only into what p0
	// gives back, once its old claim ends.
	var r2 []int64
	for round := 1; round <= 4; round++ {
		now = shT0 + int64(round)*shL
		r2 = r2[:0]
		for _, c := range append(cs[1:], cs[0]) {
			r2 = append(r2, renewAt(t, rdb, c, -1, now, shUp).grant)
		}
		if round == 1 {
			assert.Equal(t, []int64{14, 14, 14, 30}, r2, "p0 shrinks; nothing is free yet")
		}
	}
	assert.Equal(t, []int64{30, 30, 30, 30}, r2, "an equal share of four")
}

// TestLeaseShareFresh: a Redis that restarted without persistence (its
// uptime shorter than a claim's life) forgot the claims; a process keeps
// at most what it says it still holds, and a newcomer gets nothing, until
// the uptime passes a claim's life (plus the uptime's second).
func TestLeaseShareFresh(t *testing.T) {
	_, rdb := startRedis(t)
	a, b := &shareClient{id: "a"}, &shareClient{id: "b"}
	now := int64(shT0)
	renewAt(t, rdb, a, -1, now, shUp)
	require.NoError(t, rdb.FlushAll(context.Background()).Err())

	now += 500_000
	up := int64(100_000)
	r := renewAt(t, rdb, b, -1, now, up)
	assert.Zero(t, r.grant, "the newcomer")
	assert.True(t, r.fresh)
	assert.Equal(t, time.Duration(shLife+1_000_000-up)*time.Microsecond, r.retry)
	r = renewAt(t, rdb, a, -1, now, up)
	assert.Equal(t, int64(shU/2), r.grant, "an equal share, no more than a still holds")
	now += shL
	up += shL
	r = renewAt(t, rdb, a, 5, now, up)
	assert.Equal(t, int64(5), r.grant, "it may shrink")
	r = renewAt(t, rdb, a, -1, now+1, up)
	assert.Equal(t, int64(5), r.grant, "but not grow back")

	now += shLife + 1_000_000
	up += shLife + 1_000_000
	r = renewAt(t, rdb, b, -1, now, up)
	assert.False(t, r.fresh)
	assert.Equal(t, int64(shU), r.grant, "a's claims have ended")
}

// TestLeaseShareBadEntry: an entry that no renewal wrote counts as the
// whole limit held for a claim's life.
func TestLeaseShareBadEntry(t *testing.T) {
	_, rdb := startRedis(t)
	require.NoError(t, rdb.HSet(context.Background(), shKeysS, "x", "no numbers").Err())
	r := renewAt(t, rdb, &shareClient{id: "a"}, -1, shT0, shUp)
	assert.Zero(t, r.grant)
	ttl, err := rdb.PTTL(context.Background(), shKeysS).Result()
	require.NoError(t, err)
	assert.Positive(t, ttl, "the shares expire")
}

// TestLeaseShareNeverOverLimit: six processes renew at random instants
// with random demands, a tenth of the replies lost (the process keeps
// what it had), some die and some close (admitting nothing more, their
// grants counted a span after that), Redis's state lost once (FLUSHALL
// and a fresh uptime).
// At every instant the grants the script handed out, each counted from
// its renewal to its lease's end plus the span, per process the largest
// of those it could still use, add up to at most U: of 120, and of 5
// (fewer units than processes).
func TestLeaseShareNeverOverLimit(t *testing.T) {
	for _, u := range []int64{shU, 5} {
		t.Run(fmt.Sprint(u), func(t *testing.T) { neverOverLimit(t, u) })
	}
}

func neverOverLimit(t *testing.T, u int64) {
	_, rdb := startRedis(t)
	rng := rand.New(rand.NewPCG(1, 2))
	type grant struct {
		id          string
		g, from, to int64
	}
	var grants []grant
	cs := make([]*shareClient, 6)
	next := make([]int64, len(cs))
	for i := range cs {
		cs[i] = &shareClient{id: string(rune('a' + i)), u: u}
		next[i] = shT0 + rng.Int64N(shL)
	}
	now, up, flushed, shrunk := int64(shT0), int64(shUp), false, 0
	for step := 0; step < 600; step++ {
		i := 0
		for j := range next {
			if next[j] < next[i] {
				i = j
			}
		}
		up += next[i] - now
		now = next[i]
		if !flushed && step == 300 {
			require.NoError(t, rdb.FlushAll(context.Background()).Err())
			up, flushed = 200_000, true
		}
		want := int64(-1)
		if rng.IntN(2) == 0 {
			want = rng.Int64N(u)
		}
		c := cs[i]
		saved, savedAt := c.last, c.at
		q := c.req(want, now)
		if want >= 0 && q.grant > want && rng.IntN(3) == 0 {
			// It shrank its share to want before it renewed, its window
			// holding fewer (shrinkLocked): from now on it claims want, no
			// more, until its lease's end and a span.
			q.grant, q.hold, q.holdRest, q.shrunk = want, 0, 0, true
			shrunk++
			for j := range grants {
				if grants[j].id == c.id {
					grants[j].to = min(grants[j].to, now)
				}
			}
			grants = append(grants, grant{c.id, want, now, now + int64(q.rest/time.Microsecond) + shSpan})
		}
		r := renewQ(t, rdb, c, q, now, up)
		grants = append(grants, grant{c.id, r.grant, now, now + int64(r.lease/time.Microsecond) + shSpan})
		if rng.IntN(10) == 0 { // the reply was lost
			c.last, c.at = saved, savedAt
		}
		next[i] = now + shL
		if r.retry > 0 {
			next[i] = now + max(min(int64(r.retry/time.Microsecond), shL), 50_000)
		}
		switch rng.IntN(20) {
		case 0: // a process dies (SIGKILL), a new one comes later
			next[i] += 3 * shL
			cs[i] = &shareClient{id: c.id + "'", u: u}
		case 1: // a process closes its Limiter: it admits nothing more from now
			at := now + 1
			q := c.req(0, at)
			q.stop = true
			renewQ(t, rdb, c, q, at, up+1)
			for j := range grants {
				if grants[j].id == c.id {
					grants[j].to = min(grants[j].to, at+shSpan)
				}
			}
			next[i] += 2 * shL
			cs[i] = &shareClient{id: c.id + "+", u: u}
		}
	}
	var instants []int64
	for _, g := range grants {
		instants = append(instants, g.from, g.to-1)
	}
	sort.Slice(instants, func(a, b int) bool { return instants[a] < instants[b] })
	worst := int64(0)
	for _, at := range instants {
		per := map[string]int64{}
		for _, g := range grants {
			if g.from <= at && at < g.to {
				per[g.id] = max(per[g.id], g.g)
			}
		}
		sum := int64(0)
		for _, v := range per {
			sum += v
		}
		worst = max(worst, sum)
		require.LessOrEqual(t, sum, u, "at %d µs", at-shT0)
	}
	t.Logf("largest sum of the claims at one instant: %d of %d (%d renewals shrunk)", worst, u, shrunk)
	assert.Greater(t, worst, u*9/10, "the shares were in use")
}

// TestLeaseShareStop: a process that stops (its Limiter closed) gives its
// share back: it admits nothing more, so its claim ends a span after it
// stopped, not a span after its lease; a newcomer then gets it all.
func TestLeaseShareStop(t *testing.T) {
	_, rdb := startRedis(t)
	a, b := &shareClient{id: "a"}, &shareClient{id: "b"}
	now := int64(shT0)
	renewAt(t, rdb, a, -1, now, shUp)
	now += 200_000
	q := a.req(0, now)
	q.stop = true
	assert.Zero(t, renewQ(t, rdb, a, q, now, shUp).grant)
	assert.Zero(t, renewAt(t, rdb, b, -1, now+shSpan-1, shUp).grant, "what a admitted counts a span more")
	assert.Equal(t, int64(shU), renewAt(t, rdb, b, -1, now+shSpan, shUp).grant, "long before a's lease and span end")
}

// TestLeaseShareShrunk: a process that shrank its share before it
// renewed (shrinkLocked) is taken at its word: its report is its whole
// claim, so what it gave back is free at once, where a renewal that did
// not shrink keeps the old claim until the old lease's end plus the span.
// A hold it reports still counts until its rest ends.
func TestLeaseShareShrunk(t *testing.T) {
	for _, shrunk := range []bool{false, true} {
		t.Run(fmt.Sprint("shrunk=", shrunk), func(t *testing.T) {
			_, rdb := startRedis(t)
			a, b := &shareClient{id: "a"}, &shareClient{id: "b"}
			now := int64(shT0)
			require.Equal(t, int64(shU), renewAt(t, rdb, a, -1, now, shUp).grant)
			now += 200_000
			q := a.req(15, now)
			q.grant, q.shrunk = 15, shrunk
			assert.Equal(t, int64(15), renewQ(t, rdb, a, q, now, shUp).grant)
			got := renewAt(t, rdb, b, -1, now, shUp).grant
			if shrunk {
				assert.Equal(t, int64(shU-15), got, "what a gave back, at once")
			} else {
				assert.Zero(t, got, "a's old claim holds until its old lease's end plus the span")
			}
		})
	}
	_, rdb := startRedis(t)
	a, b := &shareClient{id: "a"}, &shareClient{id: "b"}
	now := int64(shT0)
	renewAt(t, rdb, a, -1, now, shUp)
	now += 200_000
	q := a.req(15, now)
	q.grant, q.hold, q.holdRest, q.shrunk = 15, shU, 500*time.Millisecond, true
	renewQ(t, rdb, a, q, now, shUp)
	assert.Zero(t, renewAt(t, rdb, b, -1, now+499_999, shUp).grant, "a's hold counts until its rest ends")
	assert.Equal(t, int64(shU-15), renewAt(t, rdb, b, -1, now+500_000, shUp).grant)
}
