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
