package pace

import "math"

// Window limiters ([FixedWindow], [SlidingLog], [SlidingCounter]) share the
// helpers in this file.
//
// Times inside the algorithms are nanoseconds since the limiter's epoch,
// which is a midnight UTC (see newEpoch). Window k of length per therefore
// covers [k·per, (k+1)·per) counted from that midnight: for every period that
// divides 24 hours (a second, a minute, 15 minutes, an hour, …) the windows
// start on the wall clock's boundaries, "per clock minute". Longer or odd
// periods (7 minutes, 48 hours) are counted from the epoch's midnight UTC,
// decades before the limiter was created, so their boundaries fall at no
// particular clock time.

// winIndex returns the index of the aligned window of length per that holds t.
func winIndex(t, per int64) int64 { return t / per }

// winStart returns the first instant of window w (w·per); ok is false when
// it cannot be represented.
func winStart(w, per int64) (start int64, ok bool) {
	if w > math.MaxInt64/per {
		return 0, false
	}
	return w * per, true
}

// winAdd returns t+d for d >= 0; ok is false when the sum overflows int64.
func winAdd(t, d int64) (sum int64, ok bool) {
	if t > math.MaxInt64-d {
		return 0, false
	}
	return t + d, true
}

// winCheck returns the error for a count n that an algorithm with a limit of
// limit units per call can never grant, or nil.
func winCheck(n int, limit int64) error {
	switch {
	case n <= 0:
		return ErrBadCount
	case int64(n) > limit:
		return ErrBurstExceeded
	}
	return nil
}

// winSpan returns k·per saturated at math.MaxInt64.
func winSpan(k, per int64) int64 {
	if per > math.MaxInt64/k {
		return math.MaxInt64
	}
	return k * per
}

// untilStart returns the time from now to the start of window w,
// saturating when that start cannot be represented.
func untilStart(w, per, now int64) int64 {
	t, ok := winStart(w, per)
	if !ok {
		return math.MaxInt64
	}
	return t - now
}

// maxBack bounds the states a window limit keeps for pushBack: a queue
// that waited further than that many windows ahead is restored only
// partly when cancelled, stricter, never looser.
const maxBack = 64

// pushBack records c's state before a booking at t > now (one that
// waited) moves c to a later window. A booking at now clears the record:
// its windows are past. popBack restores the state once the later window
// empties again, so that a queue cancelled latest first leaves c exactly
// as before it (the algorithm interface's unbook), although c tracks only
// its latest window.
func pushBack(c *cell, now, t int64, moved bool) {
	switch {
	case t <= now:
		if c.x != nil {
			c.x = nil // window limits use x for back alone
		}
	case moved:
		if c.x == nil {
			c.x = &cellExt{}
		}
		if len(c.x.back) == maxBack {
			c.x.back = append(c.x.back[:0], c.x.back[1:]...)
		}
		c.x.back = append(c.x.back, words{c.a, c.b})
	}
}

// popBack restores the state pushBack recorded last, when c's window
// (window index c.a of length per) is empty and still ahead of now.
func popBack(c *cell, now, per int64, empty bool) {
	if !empty || c.x == nil || len(c.x.back) == 0 || winIndex(now, per) >= c.a {
		return
	}
	last := c.x.back[len(c.x.back)-1]
	c.a, c.b = last.a, last.b
	if c.x.back = c.x.back[:len(c.x.back)-1]; len(c.x.back) == 0 {
		c.x = nil
	}
}
