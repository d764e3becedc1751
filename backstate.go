package pace

// A cell of a token bucket, a pacer or a window limit holds two words, so
// a booking that waited may overwrite what an earlier state needs for
// cancelling exactly: a window limit tracks only its latest window, and a
// GCRA part of All booked later than its own slot (another part held the
// reservation back) forgets its earlier TAT. Such a booking records the
// state before it (pushBack), and cancelling it while the cell is as the
// booking left it restores that state (popBack). So reservations
// cancelled latest first leave the cell exactly as before them, the
// algorithm interface's unbook contract.

// maxBack bounds the states a cell keeps: of a queue longer than that,
// cancelled latest first, the earliest bookings stay counted (stricter,
// never looser).
const maxBack = 64

// backState is a cell's state before a booking of n units at at, and
// after it.
type backState struct {
	before, after words
	at            int64
	n             int
}

// pushBack records before, c's state before the booking of n units at at
// that c now holds as its latest.
func pushBack(c *cell, before words, at int64, n int) {
	if c.x == nil {
		c.x = &cellExt{}
	}
	if len(c.x.back) == maxBack {
		c.x.back = append(c.x.back[:0], c.x.back[1:]...)
	}
	c.x.back = append(c.x.back, backState{before: before, after: words{c.a, c.b}, at: at, n: n})
}

// popBack restores the state before the latest recorded booking, and
// reports true, when the booking of n units at t being cancelled matches
// it and c is as that booking left it. Then c holds nothing booked after
// the recorded one but units at t that cancelling these n takes away:
// what was booked after it was given back, or is as fungible as the n.
// A booking cancelled from before the recorded one's instant drops the
// records: c is no longer as they knew it (stricter, never looser).
func popBack(c *cell, t int64, n int) bool {
	if c.x == nil || len(c.x.back) == 0 {
		return false
	}
	top := c.x.back[len(c.x.back)-1]
	switch {
	case top.at == t && top.n == n && top.after == (words{c.a, c.b}):
		c.a, c.b = top.before.a, top.before.b
		if c.x.back = c.x.back[:len(c.x.back)-1]; len(c.x.back) == 0 {
			c.x = nil
		}
		return true
	case t < top.at:
		dropBack(c)
	}
	return false
}

// dropBack forgets the recorded states, at a booking at once: no booking
// at once can be cancelled, so c never again is as a recorded one left it.
func dropBack(c *cell) {
	c.x = nil // these algorithms use x for the record alone
}
