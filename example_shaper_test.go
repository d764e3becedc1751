package pace_test

import (
	"fmt"
	"time"

	"github.com/pacehttp/pace"
)

func ExampleShaper_ReserveAt() {
	b, err := pace.NewShaper(pace.TokenBucket(pace.PerSecond(2), 1)) // a token every 500ms, burst 1
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		r, _ := b.ReserveAt(t0, 1, 0)
		fmt.Println(i, r.Delay)
	}
	// Output:
	// 0 0s
	// 1 500ms
	// 2 1s
}

func ExampleShaper_AllowAt() {
	b, err := pace.NewShaper(pace.TokenBucket(pace.PerSecond(2), 5))
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []bool
	for _, at := range []time.Duration{0, 0, 0, 0, 0, 0, 1100 * time.Millisecond, 1100 * time.Millisecond, 1100 * time.Millisecond} {
		got = append(got, b.AllowAt(t0.Add(at), 1))
	}
	fmt.Println(got)
	fmt.Println(b.QuotaAt(t0.Add(1600 * time.Millisecond)).Remaining) // 1.2 tokens: one whole
	// Output:
	// [true true true true true false true true false]
	// 1
}

func ExampleShaper_CancelAt() {
	b, err := pace.NewShaper(pace.TokenBucket(pace.PerSecond(60), 1))
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r1, _ := b.ReserveAt(t0, 1, 0)
	r2, _ := b.ReserveAt(t0, 1, 0) // waits one interval
	b.CancelAt(t0, r2)             // the latest first: exact
	b.CancelAt(t0, r1)
	fmt.Println(r2.Delay, b.QuotaAt(t0).Remaining, b.AllowAt(t0, 1))
	// Output:
	// 16.666667ms 1 true
}
