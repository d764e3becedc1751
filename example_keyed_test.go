package pace_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pacehttp/pace"
)

func ExampleKeyed() {
	// Two requests a second per API key, bursts of 2; at most 100,000 keys.
	k, err := pace.NewKeyed(pace.TokenBucket(pace.PerSecond(2), 2), pace.KeyedOptions{MaxKeys: 100_000})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, key := range []string{"alice", "alice", "alice", "bob"} {
		fmt.Println(key, k.AllowAt(t0, key, 1))
	}
	fmt.Println("tracked:", k.Len())

	// A server asked alice to come back in 30 seconds. Her next request,
	// just under a second later, is booked for then.
	k.PauseUntil("alice", t0.Add(30*time.Second))
	r, _ := k.ReserveAt(t0.Add(999*time.Millisecond), "alice", 1, 0)
	fmt.Println("alice waits", r.Delay.Round(time.Second))

	// A minute later alice's bucket has refilled behind her booking at 30s.
	// Keys whose bucket is full again are forgotten as the store is used.
	fmt.Println("a minute later alice", k.AllowAt(t0.Add(time.Minute), "alice", 1), k.AllowAt(t0.Add(time.Minute), "alice", 1))
	// Output:
	// alice true
	// alice true
	// alice false
	// bob true
	// tracked: 2
	// alice waits 29s
	// a minute later alice true true
}

func ExampleKeyed_Wait() {
	// The zero Limit only honours pauses, for example a host's cooldown
	// after a 429 with Retry-After.
	k, err := pace.NewKeyed(pace.Limit{}, pace.KeyedOptions{})
	if err != nil {
		panic(err)
	}
	k.PauseUntil("api.example.com", time.Now().Add(time.Hour))
	_, err = k.Wait(context.Background(), "api.example.com", time.Minute)
	var we *pace.WaitError
	if errors.As(err, &we) {
		fmt.Println(we.Key, errors.Is(err, pace.ErrWaitTooLong), we.Delay.Round(time.Minute))
	}
	_, err = k.Wait(context.Background(), "other.example.com", time.Minute)
	fmt.Println(err)
	// Output:
	// api.example.com true 1h0m0s
	// <nil>
}
