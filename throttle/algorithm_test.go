package throttle_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pacehttp/pace/throttle"
)

// TestAlgorithmString: each Algorithm reads as its constructor's
// documentation names it; the zero Algorithm and unknown values read as "".
func TestAlgorithmString(t *testing.T) {
	for a, want := range map[throttle.Algorithm]string{
		0:                       "",
		throttle.TokenBucket:    "token bucket",
		throttle.LeakyBucket:    "leaky bucket",
		throttle.FixedWindow:    "fixed window",
		throttle.SlidingLog:     "sliding log",
		throttle.SlidingCounter: "sliding counter",
		throttle.Algorithm(200): "",
	} {
		assert.Equal(t, want, a.String(), "Algorithm(%d)", uint8(a))
	}
}
