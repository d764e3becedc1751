package redislimit

import (
	"testing"
	"time"

	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
)

// TestLearntSpentQuotaOfOwnRate: as package pace's Keyed, a Limit no
// faster than the quota's own rate learns nothing from a spent quota whose
// reset is within its spacing rounded up to a second: pace's middleware
// answers "r=0;t=1" after each request of a pacer of 10/s, and pausing the
// key for that second held a fleet at 1 request a second. A longer reset,
// a quota without its rate, or a faster Limit still pauses the key.
func TestLearntSpentQuotaOfOwnRate(t *testing.T) {
	l := &Limiter{spacing: micros(100 * time.Millisecond)} // a Limit of 10/s
	for _, tt := range []struct {
		name  string
		q     throttle.Quota
		learn bool
	}{
		{"its next unit", throttle.Quota{Remaining: 0, Reset: time.Second, Limit: 10, Window: time.Second}, false},
		{"a reset past the second", throttle.Quota{Remaining: 0, Reset: 2 * time.Second, Limit: 10, Window: time.Second}, true},
		{"no rate stated", throttle.Quota{Remaining: 0, Reset: time.Second}, true},
		{"a slower quota", throttle.Quota{Remaining: 0, Reset: time.Second, Limit: 5, Window: time.Second}, true},
		{"left, at its own rate", throttle.Quota{Remaining: 3, Reset: time.Second, Limit: 10, Window: time.Second}, false},
	} {
		_, reset, _ := l.learnt(tt.q)
		assert.Equal(t, tt.learn, reset > 0, tt.name)
	}
}
