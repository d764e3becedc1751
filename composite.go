package pace

import (
	"fmt"
	"strings"
)

// All returns a Limit that holds all of limits at once, such as 10 a second
// and 500 a minute: a call goes ahead only when every part admits it, and
// every part books it at the same instant, the one at which the call really
// goes. It is all or nothing: when any part refuses, no part books anything.
//
// Zero Limits (no limit) are skipped and parts that are themselves built by
// All are flattened. The largest n one call may take is the smallest of the
// parts' maxima; more is refused with [ErrBurstExceeded]. A leaky-bucket
// pacer's queue bound ([LeakyOptions] Queue and MaxDelay) applies to the
// whole wait: when the other parts would make the call wait longer than the
// pacer lets anyone queue, it is refused with [ErrQueueFull].
//
// The Limit carries an error when no non-zero limit is given (a
// [*ConfigError] naming "limits") or when a part carries one; the part's
// error is wrapped, so errors.As finds the part's [*ConfigError] and
// errors.Is matches [ErrInvalidConfig].
func All(limits ...Limit) Limit {
	var parts []algorithm
	for i, l := range limits {
		switch {
		case l.err != nil:
			return newLimit(nil, fmt.Errorf("pace: part %d of All: %w", i, l.err))
		case l.alg == nil:
			continue
		}
		if c, ok := l.alg.(*composite); ok {
			parts = append(parts, c.parts...)
		} else {
			parts = append(parts, l.alg)
		}
	}
	if len(parts) == 0 {
		return newLimit(nil, configErr("limits", limits, "at least one non-zero limit is required"))
	}
	return newLimit(newComposite(parts), nil)
}

// Composite is a single-key limiter holding several limits at once (see
// [All]) with explicit-time methods (ReserveAt, AllowAt, CancelAt) and a
// blocking Wait. It keeps one state per part. Create it with
// [NewComposite]; the zero Composite is not usable (its methods panic). It
// is safe for concurrent use by multiple goroutines.
type Composite struct{ local }

// NewComposite returns a limiter that holds all of limits at once (see
// [All]). It returns a [*ConfigError] naming "limits" when no non-zero limit
// is given, or an error wrapping a part's [*ConfigError].
//
// Its ReserveAt returns [ErrBadCount] for n <= 0, [ErrBurstExceeded] for n
// above the smallest part's maximum, any part's refusal (such as
// [ErrQueueFull]) unchanged, and [ErrWaitTooLong] when the instant cannot be
// represented or the parts do not settle on one.
func NewComposite(limits ...Limit) (*Composite, error) {
	l := All(limits...)
	if l.err != nil {
		return nil, l.err
	}
	return &Composite{local: newLocal(l.alg)}, nil
}

// composite is the algorithm. cell.x.parts holds one cell per part,
// allocated on the first booking; until then every part is fresh.
type composite struct {
	parts []algorithm
	n     int   // smallest maxN of the parts
	spn   int64 // largest span of the parts
}

var _ algorithm = (*composite)(nil)

// newComposite returns the composite of parts, none of them a composite.
func newComposite(parts []algorithm) *composite {
	c := &composite{parts: parts, n: parts[0].maxN()}
	for _, p := range parts {
		c.n = min(c.n, p.maxN())
		c.spn = max(c.spn, p.span())
	}
	return c
}

// waitBounded is implemented by parts that refuse, with ErrQueueFull, a
// booking more than waitBound nanoseconds after now: the leaky-bucket
// pacer's queue. A part's earliest judges that bound from the instant it is
// given, which in a composite is the instant another part has already moved
// the call to; the composite checks the bound against the real now itself.
type waitBounded interface {
	waitBound() int64
}

// freshCell is the zero cell handed to parts before the composite's first
// booking. earliest and idle only read their cell, so sharing it is safe.
var freshCell cell

// compositeMaxCalls bounds the calls to the parts' earliest per parts. Every
// part admits at any instant after one at which it admits, so the search
// settles after at most 2·len(parts)−1 calls; the bound only guards against a
// part that breaks that rule.
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
	t, k := now, len(m.parts)
	for calls, stable, i := 0, 0, 0; stable < k; i = (i + 1) % k {
		if calls++; calls > compositeMaxCalls*k {
			return 0, ErrWaitTooLong
		}
		u, err := m.parts[i].earliest(m.part(c, i), t, n)
		if err != nil {
			return u, err
		}
		if u > t {
			t, stable = u, 1
		} else {
			stable++
		}
	}
	for _, p := range m.parts {
		if b, ok := p.(waitBounded); ok && t-now > b.waitBound() {
			return t, ErrQueueFull
		}
	}
	return t, nil
}

func (m *composite) book(c *cell, now, t int64, n int) {
	if c.x == nil {
		c.x = &cellExt{}
	}
	if c.x.parts == nil {
		c.x.parts = make([]cell, len(m.parts))
	}
	for i, p := range m.parts {
		p.book(&c.x.parts[i], now, t, n)
	}
}

func (m *composite) unbook(c *cell, now, t int64, n int) {
	if c.x == nil || c.x.parts == nil {
		return
	}
	for i, p := range m.parts {
		p.unbook(&c.x.parts[i], now, t, n)
	}
}

// depart moves the unit in every part.
func (m *composite) depart(c *cell, now, t, left int64) {
	if c.x == nil || c.x.parts == nil {
		return
	}
	for i, p := range m.parts {
		p.depart(&c.x.parts[i], now, t, left)
	}
}

// relax relaxes every part.
func (m *composite) relax(c *cell, latest int64) {
	if c.x == nil || c.x.parts == nil {
		return
	}
	for i, p := range m.parts {
		p.relax(&c.x.parts[i], latest)
	}
}

// resume prepares every part.
func (m *composite) resume(c *cell, at int64) {
	if c.x == nil {
		c.x = &cellExt{}
	}
	if c.x.parts == nil {
		c.x.parts = make([]cell, len(m.parts))
	}
	for i, p := range m.parts {
		p.resume(&c.x.parts[i], at)
	}
}

func (m *composite) idle(c *cell, now int64) bool {
	for i, p := range m.parts {
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
	for i, p := range m.parts {
		if p.binds(&c.x.parts[i], t) {
			return true
		}
	}
	return false
}

// interval is the widest spacing of the parts.
func (m *composite) interval() int64 {
	var i int64
	for _, p := range m.parts {
		i = max(i, p.interval())
	}
	return i
}

func (m *composite) maxN() int { return m.n }

func (m *composite) String() string {
	var b strings.Builder
	b.WriteString("all of (")
	for i, p := range m.parts {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	b.WriteString(")")
	return b.String()
}
