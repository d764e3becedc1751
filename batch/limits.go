package batch

import (
	"slices"
	"time"

	"github.com/pacehttp/pace"
)

// Run's two limits on starts are exact sliding logs (pace.SlidingLog): the
// ceiling of Options.Rate, and the limit learned from throttles. A start
// may happen at t only if fewer than N starts happened in (t-Per, t]. Run's
// goroutine drives them with explicit time: delayAt asks, bookAt records.

// delayAt returns how long after now l lets one more start happen (0: at
// once), booking nothing. It reserves the start and gives it straight
// back. That leaves the log as it was, because no booking comes after it
// (see pace.SlidingLog.CancelAt). A delay too long to represent is the
// largest Duration.
func delayAt(l *pace.Shaper, now time.Time) time.Duration {
	r, err := l.ReserveAt(now, 1, 0)
	if err != nil {
		return maxDuration
	}
	l.CancelAt(now, r)
	return r.Delay
}

// bookAt records a start at t in l. It books at t itself when delayAt(l,
// t) is 0, as it is for every attempt Run starts. Else it books at the
// first instant after t that l allows.
func bookAt(l *pace.Shaper, t time.Time) { _, _ = l.ReserveAt(t, 1, 0) }

// maxStreak bounds the starts remembered for learning a limit: enough for a
// quota of 65,536 requests per window, 512 KiB at most.
const maxStreak = 1 << 16

// forgetAbove is the size at which a learned limit, grown while the server
// stayed quiet, is dropped: it no longer says anything a run would notice.
const forgetAbove = 1 << 20

// learner derives a limit from the starts the server accepted between two
// throttles, and relaxes it while the server stays quiet. Only Run's
// goroutine uses it.
//
// It is not pace.Transport's adaptive rate. That one cuts a configured
// limit's pace after a throttle and climbs back to it. A learner has no
// configured limit: it learns a count per window from what the server
// accepted, as a quota server counts. The engine is the root's: a
// pace.SlidingLog on a pace.Shaper, grown in place by Shaper.SetLimitAt.
type learner struct {
	streak  []time.Time  // accepted starts since the last resume, unordered
	learned pace.Rate    // the learned limit as it stands; zero: none
	limit   *pace.Shaper // enforces learned, or nil
	since   time.Time    // when the limit was set or last grew
}

// accepted records the start of an attempt the server did not throttle.
func (l *learner) accepted(start time.Time) {
	if len(l.streak) == maxStreak {
		l.streak = slices.Delete(l.streak, 0, maxStreak/4) // forget the oldest quarter
	}
	l.streak = append(l.streak, start)
}

// resume learns the limit the server showed, at now: the instant the probe
// that started at probe came back unthrottled. The limit is as many starts
// as the server accepted in the streak before the pause. It holds in any
// window as long as the time from the first of them to now. The streak's
// starts and the probe's seed the new limit's log. So the limit holds from
// this instant. The probe counts as a start at now: the limit would not
// have let it start before now. The probe opens the next streak.
func (l *learner) resume(now, probe time.Time) {
	if len(l.streak) > 0 {
		slices.SortFunc(l.streak, func(a, b time.Time) int { return a.Compare(b) })
		if per := now.Sub(l.streak[0]); per > 0 {
			l.set(pace.Rate{N: len(l.streak), Per: per}, now)
			for _, t := range l.streak {
				l.started(t)
			}
			l.started(probe)
		}
	}
	l.streak = append(l.streak[:0], probe)
}

// set makes r, which has N and Per positive, the learned limit at now,
// with an empty log.
func (l *learner) set(r pace.Rate, now time.Time) {
	l.learned, l.since = r, now
	if l.limit = newLog(r); l.limit == nil {
		l.forget()
	}
}

// forget drops the learned limit.
func (l *learner) forget() { l.learned, l.limit = pace.Rate{}, nil }

// grown returns r with N grown by an eighth, and by one at least.
func grown(r pace.Rate) pace.Rate {
	r.N += max(1, r.N/8)
	return r
}

// newLog returns a sliding log of r, or nil if r is not valid: a rate the
// learner grew past the sliding log's cap of 1<<20, which it then forgets.
func newLog(r pace.Rate) *pace.Shaper {
	l, err := pace.NewShaper(pace.SlidingLog(r))
	if err != nil {
		return nil
	}
	return l
}

// wait returns how long after now the learned limit lets the next attempt
// start. It first grows the limit by an eighth for each whole window that
// passed since it was set or last grew (the server stayed quiet). The grown
// limit is exact at once: its log keeps every start of the window that
// passed.
func (l *learner) wait(now time.Time) time.Duration {
	if l.limit == nil {
		return 0
	}
	if now.Sub(l.since) >= l.learned.Per {
		for now.Sub(l.since) >= l.learned.Per {
			l.learned = grown(l.learned)
			l.since = l.since.Add(l.learned.Per)
			if l.learned.N >= forgetAbove {
				l.forget()
				return 0
			}
		}
		if l.limit.SetLimitAt(now, pace.SlidingLog(l.learned)) != nil {
			l.forget() // past the sliding log's cap
			return 0
		}
	}
	return delayAt(l.limit, now)
}

// started records an attempt's start under the learned limit.
func (l *learner) started(t time.Time) {
	if l.limit != nil {
		bookAt(l.limit, t)
	}
}

// rate returns the learned limit, or the zero Rate.
func (l *learner) rate() pace.Rate { return l.learned }
