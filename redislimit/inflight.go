package redislimit

import (
	"sync"
	"time"
)

// maxInflight bounds the Permits a Limiter remembers between Wait and
// Settle: a Permit beyond it (more than 65536 requests between their Wait
// and their Settle, or Permits never settled, a caller's bug) is admitted
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
	members []string  // the decision's sorted-set members, per part
	moved   bool      // Depart has moved the booking
}

// inflights is the table of a Limiter's Permits in flight, by the id that
// Permit.Gen carries (see packGen).
type inflights struct {
	mu   sync.Mutex
	m    map[uint32]*inflight
	next uint32
}

// add remembers e and returns its id, or 0 when the table is full.
func (t *inflights) add(e *inflight) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= maxInflight {
		return 0
	}
	if t.m == nil {
		t.m = make(map[uint32]*inflight)
	}
	for {
		t.next = (t.next + 1) & 0x7fffffff
		if _, used := t.m[t.next]; t.next != 0 && !used {
			break
		}
	}
	t.m[t.next] = e
	return t.next
}

// get returns the entry of id, or nil.
func (t *inflights) get(id uint32) *inflight {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// take returns and forgets the entry of id, or nil.
func (t *inflights) take(id uint32) *inflight {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[id]
	delete(t.m, id)
	return e
}
