package pace_test

import (
	"fmt"
	"time"

	"github.com/pacehttp/pace"
)

func ExampleLeakyBucket() {
	p, err := pace.NewShaper(pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Queue: 2}))
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 4 {
		r, err := p.ReserveAt(t0, 1, 0)
		fmt.Println(r.Delay, err)
	}
	// Output:
	// 0s <nil>
	// 100ms <nil>
	// 200ms <nil>
	// 300ms pace: rate limited: queue full
}

func ExampleLeakyBucket_nginx() {
	// nginx "limit_req zone=... rate=10r/s burst=5 delay=2": three at once,
	// three more delayed, the rest refused.
	p, err := pace.NewShaper(pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Slack: 2, Queue: 3}))
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 7 {
		r, err := p.ReserveAt(t0, 1, 0)
		if err != nil {
			fmt.Println("refused:", err)
			break
		}
		fmt.Println(r.Delay)
	}
	fmt.Println(pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Slack: 2, Queue: 3}))
	// Output:
	// 0s
	// 0s
	// 0s
	// 100ms
	// 200ms
	// 300ms
	// refused: pace: rate limited: queue full
	// leaky bucket 10/1s queue 3 slack 2
}
