package pace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// boundaryCalls returns the 121 call instants of the boundary case: evenly
// spaced from 12:00:59 to 12:01:01 inclusive (minute 0:59 to 1:01 read as
// m:ss around the clock minute that starts at 12:01:00), one every 2s/120 =
// 16.67 ms, rounded down to the nanosecond.
func boundaryCalls() []time.Time {
	calls := make([]time.Time, 121)
	for i := range calls {
		calls[i] = winAt(59*time.Second + time.Duration(int64(i)*int64(2*time.Second)/120))
	}
	return calls
}

// TestFixedWindowBoundaryDoubling shows the fixed window passing twice its
// limit across a boundary. Limit: 60 per clock minute. Calls: 121, evenly
// spaced over the two seconds from 12:00:59 to 12:01:01 inclusive. Calls 0-59
// fall in [12:00:59, 12:01:00), the last second of the first minute, and are
// all admitted (60 of 60); calls 60-120 fall in [12:01:00, 12:01:01], the
// first second of the next minute, whose fresh quota admits 60 of the 61.
// So 120 calls are admitted within 2 s, against a limit of 60 a minute. The
// sliding log, counting over a trailing minute, admits only 60.
func TestFixedWindowBoundaryDoubling(t *testing.T) {
	fw, err := NewShaper(FixedWindow(PerMinute(60)))
	if err != nil {
		t.Fatal(err)
	}
	log, err := NewShaper(SlidingLog(PerMinute(60)))
	if err != nil {
		t.Fatal(err)
	}
	var perMinute [2]int
	admitted, exact := 0, 0
	for _, c := range boundaryCalls() {
		if fw.AllowAt(c, 1) {
			admitted++
			perMinute[c.Minute()]++
		}
		if log.AllowAt(c, 1) {
			exact++
		}
	}
	if admitted != 120 || perMinute != [2]int{60, 60} {
		t.Errorf("fixed window admitted %d (%v per clock minute), want 120 (60 and 60)", admitted, perMinute)
	}
	if exact != 60 {
		t.Errorf("sliding log admitted %d of the same calls, want 60", exact)
	}
}

func TestFixedWindowAllowAt(t *testing.T) {
	l, err := NewShaper(FixedWindow(PerSecond(3)))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	runWinAllow(t, l, []winAllow{
		{0, 1, true},
		{0, 2, true},
		{0, 1, false},         // window [0, 1s) is full
		{999 * ms, 1, false},  // still the same window
		{1000 * ms, 3, true},  // a new window, at once full
		{1500 * ms, 1, false}, // full
		{3200 * ms, 1, true},  // windows are forgotten once past
		{3200 * ms, 2, true},
		{3999 * ms, 1, false},
		{4000 * ms, 2, true},
	})
}

func TestFixedWindowReserveAt(t *testing.T) {
	l, err := NewShaper(FixedWindow(PerSecond(2)))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	runWinReserve(t, l, []winReserve{
		{300 * ms, 1, 0, nil},
		{300 * ms, 1, 0, nil},
		{300 * ms, 1, 700 * ms, nil},  // the next window, starting at 1s
		{400 * ms, 1, 600 * ms, nil},  // joins the booked window, now full
		{500 * ms, 1, 1500 * ms, nil}, // the window after, starting at 2s
		{500 * ms, 2, 2500 * ms, nil}, // a window of its own, at 3s
		{500 * ms, 3, 0, ErrBurstExceeded},
		{500 * ms, 0, 0, ErrBadCount},
	})
	// Bookings never go back: the window at 3s is booked, so a call at 2.5s
	// must wait for the next one although 2s has room. That one (at 4s) then
	// has one unit left.
	runWinReserve(t, l, []winReserve{{2500 * ms, 1, 1500 * ms, nil}})
	runWinAllow(t, l, []winAllow{{2500 * ms, 1, false}, {4 * time.Second, 1, true}, {4 * time.Second, 1, false}})
}

// TestFixedWindowCancel: reservations cancelled latest first are given
// back exactly, those that waited into a later window included: the
// window they left comes back (algorithm.unbook's contract; the queue of
// Keyed.Wait relies on it). A reservation cancelled out of order stays
// booked in its window while a later one is tracked (stricter, never
// looser).
func TestFixedWindowCancel(t *testing.T) {
	l, err := NewShaper(FixedWindow(PerSecond(2)))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	runWinAllow(t, l, []winAllow{{100 * ms, 1, true}})
	rs := runWinReserve(t, l, []winReserve{
		{200 * ms, 1, 0, nil},
		{200 * ms, 1, 800 * ms, nil},
		{200 * ms, 1, 800 * ms, nil},
	})
	for i := len(rs) - 1; i >= 0; i-- {
		l.CancelAt(winAt(200*ms), rs[i])
	}
	// Every unit is back: the window at 0 holds the one allowed, as before.
	runWinReserve(t, l, []winReserve{
		{250 * ms, 1, 0, nil},
		{250 * ms, 1, 750 * ms, nil},
		{250 * ms, 1, 750 * ms, nil},
		{250 * ms, 1, 1750 * ms, nil},
	})

	// Out of order: the reservation in the window at 1 s is cancelled
	// while one at 2 s is booked; it stays counted.
	l3, err := NewShaper(FixedWindow(PerSecond(1)))
	require.NoError(t, err)
	rs = runWinReserve(t, l3, []winReserve{
		{100 * ms, 1, 0, nil},
		{100 * ms, 1, 900 * ms, nil},
		{100 * ms, 1, 1900 * ms, nil},
	})
	l3.CancelAt(winAt(100*ms), rs[1])
	l3.CancelAt(winAt(100*ms), rs[2])
	runWinReserve(t, l3, []winReserve{{100 * ms, 1, 1900 * ms, nil}})

	// In the current window the state is restored exactly: cancelling a
	// reservation made at 0 lets the same units through again.
	l2, err := NewShaper(FixedWindow(PerSecond(2)))
	if err != nil {
		t.Fatal(err)
	}
	rs = runWinReserve(t, l2, []winReserve{{0, 2, 0, nil}})
	l2.CancelAt(winAt(0), rs[0])
	runWinAllow(t, l2, []winAllow{{0, 2, true}, {0, 1, false}})
}

// TestFixedWindowVsTokenBucket runs the calls of the boundary case through a
// token bucket of capacity 10 refilled at 1/s, idle before: it admits at
// most 12 of them (capacity + rate·2s), where the fixed window admitted 120.
// Exactly 12: 10 from the full bucket at once, then one at 12:01:00 and one
// at 12:01:01, a token per whole second after the first call.
func TestFixedWindowVsTokenBucket(t *testing.T) {
	b, err := NewShaper(TokenBucket(PerSecond(1), 10))
	if err != nil {
		t.Fatal(err)
	}
	var admitted []time.Time
	for _, c := range boundaryCalls() {
		if b.AllowAt(c, 1) {
			admitted = append(admitted, c)
		}
	}
	if len(admitted) != 12 {
		t.Fatalf("token bucket admitted %d calls, want 12 (10 + 2)", len(admitted))
	}
	for i, want := range []time.Time{winAt(60 * time.Second), winAt(61 * time.Second)} {
		if got := admitted[10+i]; !got.Equal(want) {
			t.Errorf("admitted call %d at %v, want %v", 10+i, got.Format("15:04:05.000"), want.Format("15:04:05.000"))
		}
	}
}
