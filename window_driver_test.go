package pace

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// winBooking is one successful AllowAt or ReserveAt seen by a winDriver.
type winBooking struct {
	at        int64 // nanoseconds since the limiter's epoch
	n         int
	r         Reservation
	cancelled bool
}

// winPromise checks a limit's promise over the bookings still standing, for
// the windows that contain instant t (the instant just booked). Checking
// every window that contains each new booking, as it is made, checks every
// window at every moment: cancels only ever remove bookings.
type winPromise func(books []winBooking, t int64) error

// winDriver runs operations against a local limiter on explicit times, keeps
// the bookings it made and checks a promise after each one.
type winDriver struct {
	l     *Shaper
	now   int64 // nanoseconds since l.epoch, >= 1
	books []winBooking
	check winPromise
	fresh cell // a cell that never books, to compare idle cells with
}

func newWinDriver(alg algorithm, check winPromise, start int64) *winDriver {
	return &winDriver{l: newShaper(alg), now: max(start, 1), check: check}
}

func (d *winDriver) time() time.Time { return d.l.epoch.Add(time.Duration(d.now)) }

// step moves the clock by delta (which may be negative), keeping it within
// [1, MaxInt64/2] as the limiters' clock does.
func (d *winDriver) step(delta int64) {
	switch {
	case delta > 0 && d.now > math.MaxInt64/2-delta:
		d.now = math.MaxInt64 / 2
	case delta < 0 && d.now < 1-delta:
		d.now = 1
	default:
		d.now += delta
	}
}

func (d *winDriver) allow(n int) error {
	if !d.l.AllowAt(d.time(), n) {
		return nil
	}
	if n <= 0 || n > d.l.alg.maxN() {
		return fmt.Errorf("AllowAt(%d, n=%d) = true, want false", d.now, n)
	}
	return d.record(winBooking{at: d.now, n: n})
}

func (d *winDriver) reserve(n int, maxWait time.Duration) error {
	var (
		r   Reservation
		err error
	)
	if maxWait == 0 {
		r, err = d.l.ReserveAt(d.time(), n, 0)
	} else {
		r, err = reserveCell(d.l.alg, &d.l.c, d.now, n, maxWait)
	}
	switch {
	case r.Delay < 0:
		return fmt.Errorf("ReserveAt(%d, n=%d): negative delay %v", d.now, n, r.Delay)
	case err != nil && r.n != 0:
		return fmt.Errorf("ReserveAt(%d, n=%d) winBooking %d units and failed: %v", d.now, n, r.n, err)
	case err != nil:
		return nil
	case n <= 0 || n > d.l.alg.maxN():
		return fmt.Errorf("ReserveAt(%d, n=%d) succeeded, want an error", d.now, n)
	case r.at != d.now+int64(r.Delay) || r.n != n:
		return fmt.Errorf("ReserveAt(%d, n=%d) = %+v, inconsistent", d.now, n, r)
	}
	return d.record(winBooking{at: r.at, n: n, r: r})
}

// cancel gives back the i-th standing reservation (modulo their number)
// whose instant is not before now, as a caller abandoning its wait would.
func (d *winDriver) cancel(i int) {
	var open []int
	for j, b := range d.books {
		if !b.cancelled && b.r.n > 0 && b.at >= d.now {
			open = append(open, j)
		}
	}
	if len(open) == 0 {
		return
	}
	j := open[i%len(open)]
	d.l.CancelAt(d.time(), d.books[j].r)
	d.books[j].cancelled = true
}

func (d *winDriver) record(b winBooking) error {
	d.books = append(d.books, b)
	if err := d.check(d.standing(), b.at); err != nil {
		return fmt.Errorf("after booking %d units at %d (now %d): %w", b.n, b.at, d.now, err)
	}
	return nil
}

func (d *winDriver) standing() []winBooking {
	var s []winBooking
	for _, b := range d.books {
		if !b.cancelled {
			s = append(s, b)
		}
	}
	return s
}

// checkIdle verifies that a cell reported idle decides like a fresh one.
func (d *winDriver) checkIdle() error {
	alg := d.l.alg
	if !alg.idle(&d.l.c, d.now) {
		return nil
	}
	for n := 1; n <= min(alg.maxN(), 8); n++ {
		t1, err1 := alg.earliest(&d.l.c, d.now, n)
		t2, err2 := alg.earliest(&d.fresh, d.now, n)
		if t1 != t2 || (err1 == nil) != (err2 == nil) {
			return fmt.Errorf("idle cell at %d: earliest(n=%d) = %d, %v; fresh cell: %d, %v", d.now, n, t1, err1, t2, err2)
		}
	}
	return nil
}

// run executes one operation chosen by op (0-255) with argument arg and
// checks the promise; r is the limit's rate, used to scale steps.
func (d *winDriver) run(op, arg byte, r Rate) error {
	per := int64(r.Per)
	switch op % 16 {
	case 0, 1, 2:
		d.step(winFrac(per, int64(arg), 64)) // forward, up to 4 windows
	case 3:
		d.step(-winFrac(per, int64(arg), 128)) // backward, up to 2 windows
	case 4, 5, 6, 7, 8:
		return d.allow(winCount(arg, r.N))
	case 9, 10, 11, 12:
		return d.reserve(winCount(arg, r.N), 0)
	case 13:
		return d.reserve(winCount(arg, r.N), time.Duration(winFrac(per, int64(arg%8), 4)))
	case 14:
		d.cancel(int(arg))
	case 15:
		d.step(int64(arg % 4)) // a few nanoseconds
	}
	return d.checkIdle()
}

// winFrac returns ⌊per·num/den⌋ for small num >= 0 and den > 0, saturated at
// MaxInt64/2.
func winFrac(per, num, den int64) int64 {
	if num > 0 && per/den > math.MaxInt64/2/num {
		return math.MaxInt64 / 2
	}
	return per/den*num + per%den*num/den
}

// count maps arg to a unit count: mostly 1..n, sometimes 0 or n+1.
func winCount(arg byte, n int) int {
	switch arg % 32 {
	case 0:
		return 0
	case 1:
		return n + 1
	}
	return 1 + int(arg/32)%n
}

// winUnitsIn returns the units booked in [from, to).
func winUnitsIn(books []winBooking, from, to int64) int {
	u := 0
	for _, b := range books {
		if from <= b.at && b.at < to {
			u += b.n
		}
	}
	return u
}

// winMaxTrailing returns the most units in any half-open window [s, s+per)
// that contains t. The maximum is reached with s at a booked instant.
func winMaxTrailing(books []winBooking, t, per int64) int {
	var near []winBooking
	for _, b := range books {
		if b.at > t-per && b.at < t+per {
			near = append(near, b)
		}
	}
	best := 0
	for _, s := range near {
		if s.at <= t {
			best = max(best, winUnitsIn(near, s.at, s.at+per))
		}
	}
	return best
}

// logPromise: at most N units in any window [s, s+Per).
func logPromise(r Rate) winPromise {
	return func(books []winBooking, t int64) error {
		if got := winMaxTrailing(books, t, int64(r.Per)); got > r.N {
			return fmt.Errorf("sliding log %v: %d units in a window of %v around %d", r, got, r.Per, t)
		}
		return nil
	}
}

// fixedPromise: at most N units in each aligned window.
func fixedPromise(r Rate) winPromise {
	per := int64(r.Per)
	return func(books []winBooking, t int64) error {
		start := t / per * per
		if got := winUnitsIn(books, start, start+per); got > r.N {
			return fmt.Errorf("fixed window %v: %d units in window [%d, %d)", r, got, start, start+per)
		}
		return nil
	}
}

// counterPromise: at most N units in each aligned window and at most 2N−1 in
// any window [s, s+Per), as SlidingCounter documents.
func counterPromise(r Rate) winPromise {
	fixed := fixedPromise(r)
	return func(books []winBooking, t int64) error {
		if err := fixed(books, t); err != nil {
			return err
		}
		if got := winMaxTrailing(books, t, int64(r.Per)); got > 2*r.N-1 {
			return fmt.Errorf("sliding counter %v: %d units in a window of %v around %d", r, got, r.Per, t)
		}
		return nil
	}
}

// allPromises checks every part's promise.
func allPromises(ps ...winPromise) winPromise {
	return func(books []winBooking, t int64) error {
		for _, p := range ps {
			if err := p(books, t); err != nil {
				return err
			}
		}
		return nil
	}
}

// kinds of window limit, for tables and random schedules.
var windowKinds = []struct {
	name  string
	limit func(Rate) Limit
	check func(Rate) winPromise
}{
	{"fixed", FixedWindow, fixedPromise},
	{"sliding log", SlidingLog, logPromise},
	{"sliding counter", SlidingCounter, counterPromise},
}

// winSortedAt returns the standing bookings' instants, one per unit, in order.
func winSortedAt(books []winBooking) []int64 {
	var ts []int64
	for _, b := range books {
		for range b.n {
			ts = append(ts, b.at)
		}
	}
	slices.Sort(ts)
	return ts
}
