package pace

import "github.com/pacehttp/pace/throttle"

// FixedWindow returns a fixed-window Limit: at most r.N units in each
// window of length r.Per. Windows are aligned to the clock. For every
// r.Per that divides 24 hours, a window starts on a multiple of r.Per since
// midnight UTC. So PerMinute(60) means 60 per clock minute. Other periods
// are counted from a midnight UTC long ago. It is the counting that quota
// APIs announce with a remaining count and a reset time.
//
// A fixed window admits up to 2·r.N in a span of r.Per that straddles a
// boundary: r.N at the end of one window, r.N at the start of the next.
// Use [SlidingLog] when the server counts over a trailing window.
//
// Bookings never go back in time. Once a reservation has waited into a
// later window, later calls wait for that window too. A request refused
// costs nothing. Cancelling gives the units back to the window they were
// booked in. When that empties a window reservations had waited into, the
// window before it comes back as it was. So reservations cancelled latest
// first leave the limiter exactly as before them, a queue of them too (up
// to 64 windows deep). Units given back to an earlier window while a later
// one holds bookings stay counted: stricter, never looser.
//
// The Limit carries a [*ConfigError] naming "Rate.N" or "Rate.Per" when
// either is not positive, or Per is over about 146 years (see [Rate]).
func FixedWindow(r Rate) Limit {
	if err := r.validate("Rate"); err != nil {
		return newLimit(nil, err)
	}
	return newLimit(&fixedWindow{newWindow(throttle.FixedWindow, r)}, nil)
}

// fixedWindow is the algorithm. cell.a is the index of the window last
// booked, and cell.b the units booked in it. Only the latest booked window
// is tracked, so bookings never go back to an earlier one.
type fixedWindow struct{ window }

var _ algorithm = (*fixedWindow)(nil)

func (f *fixedWindow) earliest(c *cell, now int64, n int) (int64, error) {
	if err := winCheck(n, f.n); err != nil {
		return 0, err
	}
	w := winIndex(now, f.per)
	fits := c.b+int64(n) <= f.n
	switch {
	case w > c.a:
		return now, nil
	case w == c.a && fits:
		return now, nil
	case w < c.a && fits:
		// The booked window lies ahead of now (a reservation waited into it,
		// or the clock stepped back): join it.
		return f.start(c.a)
	}
	return f.start(c.a + 1)
}

func (f *fixedWindow) start(w int64) (int64, error) {
	t, ok := winStart(w, f.per)
	if !ok {
		return 0, ErrWaitTooLong
	}
	return t, nil
}

func (f *fixedWindow) book(c *cell, now, t int64, n int) {
	if t <= now {
		if c.x != nil { // past bookings recorded (backstate.go)
			dropBack(c)
		}
	}
	if w := winIndex(t, f.per); w > c.a {
		before := words{c.a, c.b}
		c.a, c.b = w, int64(n)
		if t > now { // it waited: the window before is forgotten
			pushBack(c, before, t, n)
		}
		return
	}
	c.b += int64(n)
}

// unbook gives the units back to their window if it is still the one
// tracked. A booking that moved to a later window, cancelled while the
// cell is as it left it, brings back the window before (popBack). Units of
// a window no longer tracked stay booked: stricter than before, never
// looser.
func (f *fixedWindow) unbook(c *cell, _, t int64, n int) {
	switch {
	case popBack(c, t, n):
	case winIndex(t, f.per) == c.a:
		c.b = max(0, c.b-int64(n))
	}
}

func (f *fixedWindow) idle(c *cell, now int64) bool {
	w := winIndex(now, f.per)
	return w > c.a || (w == c.a && c.b == 0)
}

// standing is the fixed window's quotaState at now: the window that holds
// now, or the one booked ahead of it (then nothing fits until that window
// starts).
func (f *fixedWindow) standing(c *cell, now int64) quotaState {
	s := quotaState{limit: f.n, window: f.per}
	w := winIndex(now, f.per)
	switch {
	case w > c.a: // a fresh window
		s.remaining = f.n
	case w == c.a:
		s.remaining = f.n - c.b
		if c.b > 0 {
			s.reset = untilStart(c.a+1, f.per, now)
		}
	default: // booked ahead of now
		s.reset = untilStart(c.a, f.per, now)
		if c.b > 0 {
			s.reset = untilStart(c.a+1, f.per, now)
		}
	}
	return s
}
