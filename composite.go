package pace

import (
	"fmt"
	"math"
	"strings"

	"github.com/pacehttp/pace/throttle"
)

// All returns a Limit that holds all of limits at once, such as 10 a second
// and 500 a minute. A call goes ahead only when every part admits it.
// Every part books it at the same instant, the one at which the call really
// goes. It is all or nothing: when any part refuses, no part books
// anything.
//
// Zero Limits (no limit) are skipped, and parts that are themselves built
// by All are flattened. The largest n one call may take is the smallest of
// the parts' maxima; more is refused with [ErrBurstExceeded]. A
// leaky-bucket pacer's queue bound ([LeakyOptions] Queue and MaxDelay)
// applies to the whole wait. The other parts may make the call wait longer
// than the pacer lets anyone queue. It is then refused with
// [ErrQueueFull].
//
// The Limit carries an error when no non-zero limit is given (a
// [*ConfigError] naming "limits"), or when a part carries one. The part's
// error is wrapped. So errors.As finds the part's [*ConfigError], and
// errors.Is matches [ErrInvalidConfig].
func All(limits ...Limit) Limit {
	var parts []algorithm
	for i, l := range limits {
		switch {
		case l.err != nil:
			return newLimit(nil, &partError{part: i + 1, err: l.err})
		case l.alg == nil:
			continue
		}
		parts = append(parts, flatten(l.alg)...)
	}
	if len(parts) == 0 {
		return newLimit(nil, configErr("limits", nil, "All needs at least one non-zero limit"))
	}
	return newLimit(newComposite(parts), nil)
}

// partError is the error of a Limit built by All from a part that carries
// one: "pace: part 2 of All: invalid Rate.N 0: must be positive". The part
// is numbered from 1 in the order the caller wrote the parts, zero Limits
// counted. The part's own error comes once. It wraps the part's error, so
// errors.As finds its *ConfigError.
type partError struct {
	part int
	err  error
}

func (e *partError) Error() string { return "pace: " + e.detail() }

// detail is Error without the leading "pace: ", for an error that quotes it.
func (e *partError) detail() string {
	return fmt.Sprintf("part %d of All: %s", e.part, strings.TrimPrefix(e.err.Error(), "pace: "))
}

func (e *partError) Unwrap() error { return e.err }

// composite is the algorithm. cell.x.parts holds one cell per part,
// allocated on the first booking; until then every part is fresh.
type composite struct {
	list  []algorithm
	n     int   // smallest maxN of the parts
	spn   int64 // largest span of the parts
	bound int64 // smallest waitBound of the parts
}

var _ algorithm = (*composite)(nil)

// newComposite returns the composite of parts, none of them a composite.
func newComposite(parts []algorithm) *composite {
	c := &composite{list: parts, n: parts[0].maxN(), bound: math.MaxInt64}
	for _, p := range parts {
		c.n = min(c.n, p.maxN())
		c.spn = max(c.spn, p.span())
		c.bound = min(c.bound, waitBound(p))
	}
	return c
}

// freshCell is the zero cell handed to parts before the composite's first
// booking. earliest and idle only read their cell, so sharing it is safe.
var freshCell cell

// compositeMaxCalls bounds the calls to the parts' earliest per parts.
// Every part admits at any instant after one at which it admits. So the
// search settles after at most 2·len(parts)−1 calls. The bound only guards
// against a part that breaks that rule.
const compositeMaxCalls = 8

func (m *composite) part(c *cell, i int) *cell {
	if c.x == nil || c.x.parts == nil {
		return &freshCell
	}
	return &c.x.parts[i]
}

// earliest moves t forward to each part's earliest instant in turn, until
// every part in a row accepts t as it is. A part's refusal is returned with
// the instant it came with (a pacer's slot, telling how long the wait would
// have been). Then no part may wait beyond its bound from now.
func (m *composite) earliest(c *cell, now int64, n int) (int64, error) {
	if err := winCheck(n, int64(m.n)); err != nil {
		return 0, err
	}
	t, k := now, len(m.list)
	for calls, stable, i := 0, 0, 0; stable < k; i = (i + 1) % k {
		if calls++; calls > compositeMaxCalls*k {
			return 0, ErrWaitTooLong
		}
		u, err := m.list[i].earliest(m.part(c, i), t, n)
		if err != nil {
			return u, err
		}
		if u > t {
			t, stable = u, 1
		} else {
			stable++
		}
	}
	// A part's earliest judges its queue bound from the instant it is
	// given, which another part may already have moved; judge it from now.
	if t-now > m.bound {
		return t, ErrQueueFull
	}
	return t, nil
}

func (m *composite) book(c *cell, now, t int64, n int) {
	if c.x == nil {
		c.x = &cellExt{}
	}
	if c.x.parts == nil {
		c.x.parts = make([]cell, len(m.list))
	}
	for i, p := range m.list {
		p.book(&c.x.parts[i], now, t, n)
	}
}

func (m *composite) unbook(c *cell, now, t int64, n int) {
	if c.x == nil || c.x.parts == nil {
		return
	}
	for i, p := range m.list {
		p.unbook(&c.x.parts[i], now, t, n)
	}
}

// depart moves the unit in every part.
func (m *composite) depart(c *cell, now, t, left int64) {
	if c.x == nil || c.x.parts == nil {
		return
	}
	for i, p := range m.list {
		departOne(p, &c.x.parts[i], now, t, left)
	}
}

// relax relaxes every part.
func (m *composite) relax(c *cell, latest int64) {
	if c.x == nil || c.x.parts == nil {
		return
	}
	for i, p := range m.list {
		p.relax(&c.x.parts[i], latest)
	}
}

// resume prepares every part.
func (m *composite) resume(c *cell, at int64) {
	if c.x == nil {
		c.x = &cellExt{}
	}
	if c.x.parts == nil {
		c.x.parts = make([]cell, len(m.list))
	}
	for i, p := range m.list {
		p.resume(&c.x.parts[i], at)
	}
}

func (m *composite) idle(c *cell, now int64) bool {
	for i, p := range m.list {
		if !p.idle(m.part(c, i), now) {
			return false
		}
	}
	return true
}

func (m *composite) span() int64 { return m.spn }

// binds reports whether any part binds.
func (m *composite) binds(c *cell, t int64) bool {
	if c.x == nil || c.x.parts == nil {
		return false
	}
	for i, p := range m.list {
		if p.binds(&c.x.parts[i], t) {
			return true
		}
	}
	return false
}

// interval is the widest spacing of the parts.
func (m *composite) interval() int64 {
	var i int64
	for _, p := range m.list {
		i = max(i, p.interval())
	}
	return i
}

func (m *composite) maxN() int { return m.n }

func (m *composite) String() string {
	var b strings.Builder
	b.WriteString("all of (")
	for i, p := range m.list {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	b.WriteString(")")
	return b.String()
}

// standing of a composite: the tightest part's limit, window and
// remaining units (the first on a tie), and the latest reset. quotaAt adds
// the composite's own wait, at least every part's, and the parts' Quotas.
func (m *composite) standing(c *cell, now int64) quotaState {
	var s quotaState
	for i, p := range m.list {
		ps := p.standing(m.part(c, i), now)
		ps.remaining = max(ps.remaining, 0)
		if i == 0 || ps.remaining < s.remaining {
			s.limit, s.window, s.remaining = ps.limit, ps.window, ps.remaining
		}
		s.reset = max(s.reset, ps.reset)
	}
	return s
}

// partsOf returns the parts of a composite, whose cell keeps one cell per
// part (cell.x.parts), or nil for a limit of one algorithm.
func partsOf(a algorithm) []algorithm {
	if m, ok := a.(*composite); ok {
		return m.list
	}
	return nil
}

// flatten returns a's parts as [All] flattens them: the parts of a
// composite, or a itself.
func flatten(a algorithm) []algorithm {
	if ps := partsOf(a); ps != nil {
		return ps
	}
	return []algorithm{a}
}

// params is never asked of a composite (Limit.Params checks parts).
func (m *composite) params() (throttle.Algorithm, Rate, int, LeakyOptions) {
	return 0, Rate{}, 0, LeakyOptions{}
}
