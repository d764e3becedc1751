package batch

import (
	"slices"
	"time"
)

// window is a sliding log: it lets a start happen at t only if fewer than n
// starts happened in (t-per, t], so no half-open window of length per ever
// holds more than n starts. It takes explicit time and is not safe for
// concurrent use.
type window struct {
	n   int
	per time.Duration
	log []time.Time // starts in the order added; only the last n matter
}

// wait returns how long after now the next start may happen (0: at once).
func (w *window) wait(now time.Time) time.Duration {
	if len(w.log) < w.n {
		return 0
	}
	return max(w.log[len(w.log)-w.n].Add(w.per).Sub(now), 0)
}

// add records a start at t. Starts must be added in time order.
func (w *window) add(t time.Time) {
	if len(w.log) >= 2*w.n+8 { // keep the last n, amortised O(1)
		w.log = append(w.log[:0], w.log[len(w.log)-w.n:]...)
	}
	w.log = append(w.log, t)
}

// maxStreak bounds the starts remembered for learning a limit: enough for a
// quota of 65,536 requests per window, 512 KiB at most.
const maxStreak = 1 << 16

// learner derives a limit from the starts the server accepted between two
// throttles, and relaxes it while the server stays quiet.
type learner struct {
	streak []time.Time // accepted starts since the last resume, unordered
	limit  *window     // the learned limit, or nil
	since  time.Time   // when limit was set or last grew
}

// accepted records the start of an attempt the server did not throttle.
func (l *learner) accepted(start time.Time) {
	if len(l.streak) == maxStreak {
		l.streak = slices.Delete(l.streak, 0, maxStreak/4) // forget the oldest quarter
	}
	l.streak = append(l.streak, start)
}

// resume learns the limit the server showed, at now, the instant the probe
// that started at probe came back unthrottled: as many starts as it accepted
// in the streak before the pause, in any window as long as the time from the
// first of them to now. The streak's starts and the probe's seed the new
// limit's log, so the limit holds from this instant; the probe opens the
// next streak.
func (l *learner) resume(now, probe time.Time) {
	if len(l.streak) > 0 {
		slices.SortFunc(l.streak, func(a, b time.Time) int { return a.Compare(b) })
		if per := now.Sub(l.streak[0]); per > 0 {
			l.limit = &window{n: len(l.streak), per: per, log: l.streak}
			l.since = now
			l.limit.add(probe)
		}
	}
	l.streak = []time.Time{probe}
}

// forgetAbove is the size at which a learned limit, grown while the server
// stayed quiet, is dropped: it no longer says anything a run would notice.
const forgetAbove = 1 << 20

// wait returns how long after now the learned limit lets the next attempt
// start, first growing the limit by an eighth for each whole window that
// passed since it was set or last grew (the server stayed quiet).
func (l *learner) wait(now time.Time) time.Duration {
	if l.limit == nil {
		return 0
	}
	for now.Sub(l.since) >= l.limit.per {
		l.limit.n += max(1, l.limit.n/8)
		l.since = l.since.Add(l.limit.per)
		if l.limit.n >= forgetAbove {
			l.limit = nil
			return 0
		}
	}
	return l.limit.wait(now)
}

// started records an attempt's start under the learned limit.
func (l *learner) started(t time.Time) {
	if l.limit != nil {
		l.limit.add(t)
	}
}

// rate returns the learned limit as a Rate, or the zero Rate.
func (l *learner) rate() Rate {
	if l.limit == nil {
		return Rate{}
	}
	return Rate{N: l.limit.n, Per: l.limit.per}
}
