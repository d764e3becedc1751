package pace_test

import (
	"fmt"

	"github.com/pacehttp/pace"
)

func ExampleTokenBucket() {
	fmt.Println(pace.TokenBucket(pace.PerMinute(600), 20))
	fmt.Println(pace.TokenBucket(pace.PerSecond(2), 0).Err())
	// Output:
	// token bucket 600/1m0s burst 20
	// pace: invalid Burst 0: must be at least 1
}
