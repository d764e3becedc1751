package pace_test

import (
	"fmt"
	"time"

	"github.com/pacehttp/pace"
)

// A fixed window of 3 per clock minute lets 6 calls through in 3 seconds
// around the minute's boundary: 3 at the end of one minute, 3 at the start
// of the next.
func ExampleFixedWindow() {
	l, err := pace.NewShaper(pace.FixedWindow(pace.PerMinute(3)))
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 12, 0, 58, 0, time.UTC)
	for _, d := range []time.Duration{0, 1000, 1500, 2000, 2500, 3000, 4000} {
		now := t0.Add(d * time.Millisecond)
		fmt.Println(now.Format("15:04:05.0"), l.AllowAt(now, 1))
	}
	// Output:
	// 12:00:58.0 true
	// 12:00:59.0 true
	// 12:00:59.5 true
	// 12:01:00.0 true
	// 12:01:00.5 true
	// 12:01:01.0 true
	// 12:01:02.0 false
}

// A sliding log never lets more than N through in any window of length Per:
// each reservation waits until an earlier booking has left the window.
func ExampleSlidingLog() {
	l, err := pace.NewShaper(pace.SlidingLog(pace.PerSecond(2)))
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		r, err := l.ReserveAt(t0.Add(time.Duration(i)*100*time.Millisecond), 1, 0)
		fmt.Println(i, r.Delay, err)
	}
	_, err = l.ReserveAt(t0, 3, 0)
	fmt.Println(err)
	// Output:
	// 0 0s <nil>
	// 1 0s <nil>
	// 2 800ms <nil>
	// 3 800ms <nil>
	// 4 1.6s <nil>
	// pace: request exceeds burst
}

// A sliding counter weighs the previous window by the part of it still
// inside the trailing window: 10 calls at 12:00:00 count 9 at 12:00:01.1,
// leaving room for one.
func ExampleSlidingCounter() {
	l, err := pace.NewShaper(pace.SlidingCounter(pace.PerSecond(10)))
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	fmt.Println(l.AllowAt(t0, 10))
	for _, d := range []time.Duration{1000, 1100, 1100, 1200, 1500} {
		now := t0.Add(d * time.Millisecond)
		fmt.Println(now.Format("05.0"), l.AllowAt(now, 1))
	}
	// Output:
	// true
	// 01.0 false
	// 01.1 true
	// 01.1 false
	// 01.2 true
	// 01.5 true
}
