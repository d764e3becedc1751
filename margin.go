package pace

import (
	"time"

	"github.com/pacehttp/pace/internal/quickest"
)

// The departure margin of a key whose limit binds: how much later than it
// actually left a request counts as leaving (see entry.depart). Servers
// count arrivals on their own clocks, after their own scheduling, so two
// requests written one interval apart can reach them closer: nginx
// limit_req (a millisecond clock) refused requests at 10 r/s that pace had
// written more than 101.5 ms apart. A fixed margin wide enough for every
// machine would slow every client, so each key learns its own, between
// baseMargin and maxMargin (until it knows its server, see at): a
// throttle of
// a request that left at its limit's slot doubles it, and a run of
// marginRun answers without one halves it again. A server that gets to a
// request late also answers it late, so an answer later than the key's
// quickest recent one makes its request count that much after it left, up
// to twice maxMargin (quickest.Cap, entry.answer).

// baseMargin is the margin a key starts with, for a limit with the given
// interval (ns): 1.5 ms, or a 64th of the interval when that is shorter.
func baseMargin(interval int64) int64 {
	return min(1500*int64(time.Microsecond), interval/64)
}

// maxMargin is the widest a key's margin grows: a 20th of the interval, or
// baseMargin when that is wider.
func maxMargin(interval int64) int64 { return max(baseMargin(interval), interval/20) }

// marginRun is how many answers in a row without a throttle, of requests
// that left at their limit's slot, halve a widened margin.
const marginRun = 128

// margin is a key's learnt departure margin, and how quickly the key's
// server answers. The zero margin is the base. Methods take explicit time
// and the key's interval (ns); the owner holds its lock.
type margin struct {
	d     int64           // the margin, ns; 0: baseMargin
	clean uint32          // answers without a throttle since d last changed
	keep  int64           // until when a widened margin outlives an idle key
	quick quickest.Window // how quickly the key's server answers
}

// answer records an answer that came rtt after its request was written,
// and returns how much later than the key's quickest recent answer it
// came, up to twice maxMargin (quickest.Cap): a request the server got
// to late, which it may also have counted late.
func (m *margin) answer(rtt, interval int64) int64 {
	return min(m.quick.Late(rtt), quickest.Cap(maxMargin(interval)))
}

// at returns the margin a departure counts with, for a limit of the given
// interval: maxMargin until the key knows how quickly its server answers
// (quickest.Window.Known), then the learnt margin. A server's first
// answers often come late, and a late answer with no quicker one before
// it shows no lateness (see answer).
func (m *margin) at(interval int64) int64 {
	if !m.quick.Known() {
		return maxMargin(interval)
	}
	return m.learnt(interval)
}

// learnt returns the learnt margin for a limit of the given interval.
func (m *margin) learnt(interval int64) int64 { return max(m.d, baseMargin(interval)) }

// widen doubles the margin at now after a throttle of a request that left
// at its limit's slot. It reports false, changing nothing, when the margin
// is at maxMargin already: then the throttle is not the server's jitter.
func (m *margin) widen(now, interval int64) bool {
	cur, top := m.learnt(interval), maxMargin(interval)
	if cur >= top {
		return false
	}
	m.d, m.clean = min(2*cur, top), 0
	m.keep = satAdd(now, marginRun*interval)
	return true
}

// answered records at now an answer without a throttle to a request that
// left at its limit's slot: the marginRun-th in a row halves a widened
// margin, never below the base.
func (m *margin) answered(now, interval int64) {
	if m.d == 0 {
		return
	}
	if m.clean++; m.clean < marginRun {
		return
	}
	m.d, m.clean = max(m.d/2, baseMargin(interval)), 0
	if m.d == baseMargin(interval) {
		m.d = 0
		return
	}
	m.keep = satAdd(now, marginRun*interval)
}

// forgettable reports whether the margin may be dropped at now: it is the
// base, or it last changed so long ago that a busy key would have halved it.
func (m *margin) forgettable(now int64) bool { return m.d == 0 || now >= m.keep }
