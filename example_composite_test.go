package pace_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/pacehttp/pace"
)

// Two limits at once, 2 a second and 3 per clock minute: the third call
// waits a second for the first, the fourth for the next minute.
func ExampleNewShaper_all() {
	l, err := pace.NewShaper(pace.All(pace.SlidingLog(pace.PerSecond(2)), pace.FixedWindow(pace.PerMinute(3))))
	if err != nil {
		panic(err)
	}
	fmt.Println(l)
	t0 := time.Date(2025, 1, 1, 12, 0, 30, 0, time.UTC)
	for i := range 4 {
		r, err := l.ReserveAt(t0, 1, 0)
		fmt.Println(i, r.Delay, err)
	}
	// Output:
	// all of (sliding log 2/1s; fixed window 3/1m0s)
	// 0 0s <nil>
	// 1 0s <nil>
	// 2 1s <nil>
	// 3 30s <nil>
}

// A part's configuration error is reported by All, and errors.As finds it.
func ExampleAll() {
	l := pace.All(pace.SlidingLog(pace.PerSecond(10)), pace.FixedWindow(pace.Rate{N: 500}))
	var ce *pace.ConfigError
	if errors.As(l.Err(), &ce) {
		fmt.Println(ce.Field, errors.Is(l.Err(), pace.ErrInvalidConfig))
	}
	fmt.Println(l.Err())
	fmt.Println(pace.All().Err())
	// Output:
	// Rate.Per true
	// pace: part 2 of All: invalid Rate.Per 0s: must be positive
	// pace: invalid limits: All needs at least one non-zero limit
}
