package redislimit

import (
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
)

// TestLearntSpentQuotaOfOwnRate: as package pace's Keyed, a Limit no
// faster than the quota's own rate learns nothing from a spent quota whose
// reset is within its spacing rounded up to a second: pace's middleware
// answers "r=0;t=1" after each request of a pacer of 10/s, and pausing the
// key for that second held a fleet at 1 request a second. A longer reset,
// a quota without its rate, a faster Limit, or a Limit that does not space
// each request (a burst, windows of another phase, leased shares) still
// pauses the key.
func TestLearntSpentQuotaOfOwnRate(t *testing.T) {
	l := &Limiter{spacing: micros(100 * time.Millisecond), spaced: true} // a pacer of 10/s
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
	// A Limit that bursts, or counts windows of its own phase, or a leased
	// one (each share spaces only its own), could send into the spent quota.
	l.spaced = false
	_, reset, _ := l.learnt(throttle.Quota{Remaining: 0, Reset: time.Second, Limit: 10, Window: time.Second})
	assert.Positive(t, reset, "a Limit that does not space each request learns the spent quota")
	for _, tt := range []struct {
		l    pace.Limit
		want bool
	}{
		{pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{}), true},
		{pace.TokenBucket(pace.PerSecond(10), 1), true},
		{pace.TokenBucket(pace.PerSecond(10), 2), false},
		{pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Slack: 1}), false},
		{pace.SlidingLog(pace.PerSecond(10)), false},
		{pace.All(pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{}), pace.FixedWindow(pace.PerMinute(100))), false},
	} {
		assert.Equal(t, tt.want, spacesEach(tt.l), "%v", tt.l)
	}
}
