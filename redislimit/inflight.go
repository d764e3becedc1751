package redislimit

import (
	"sync"
	"sync/atomic"
	"time"
)

// maxInflight bounds the Permits a Limiter remembers between Wait and
// Settle: a Permit beyond it (more than 65536 requests between their Wait
// and their Settle, 4096 in one of the table's 16 shards, or Permits never
// settled, a caller's bug) is admitted
// all the same, but its late departure is not reported to Redis (Track is
// false) and, if it is a probe, Settle cannot hand its role on early: the
// role's lease expires (Options.ProbeLease).
const maxInflight = 1 << 16

// inflight is what a Limiter remembers of a Permit until its Settle: what
// Depart and Settle send to Redis.
type inflight struct {
	lease   int64     // the probe role's lease number, or 0
	at      int64     // the booked instant, µs on Redis's clock
	slot    time.Time // the booked instant on this machine's clock, at the latest
	members []string  // the decision's sorted-set members, per part (see decision)
	moved   bool      // Depart has moved the booking
}

// inflights is the table of a Limiter's Permits in flight, by the id that
// Permit.Gen carries (see packGen), in shards by id so that concurrent
// decisions seldom wait for each other.
type inflights struct {
	next   atomic.Uint32
	shards [inflightShards]inflightShard
}

const inflightShards = 16

type inflightShard struct {
	mu sync.Mutex
	m  map[uint32]*inflight
	_  [48]byte // a cache line each
}

// add remembers e and returns its id, or 0 when the table is full.
func (t *inflights) add(e *inflight) uint32 {
	for range 4 { // an id still in use (after 2^31 Permits) takes another
		id := t.next.Add(1) & 0x7fffffff
		if id == 0 {
			continue
		}
		sh := &t.shards[id%inflightShards]
		sh.mu.Lock()
		if _, used := sh.m[id]; used || len(sh.m) >= maxInflight/inflightShards {
			full := !used
			sh.mu.Unlock()
			if full {
				return 0
			}
			continue
		}
		if sh.m == nil {
			sh.m = make(map[uint32]*inflight)
		}
		sh.m[id] = e
		sh.mu.Unlock()
		return id
	}
	return 0
}

// get returns the entry of id, or nil.
func (t *inflights) get(id uint32) *inflight {
	sh := &t.shards[id%inflightShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.m[id]
}

// take returns and forgets the entry of id, or nil.
func (t *inflights) take(id uint32) *inflight {
	sh := &t.shards[id%inflightShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[id]
	delete(sh.m, id)
	return e
}
