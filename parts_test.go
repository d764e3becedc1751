package pace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pacehttp/pace/throttle"
)

// part is what Params returns, as one value.
type part struct {
	alg   throttle.Algorithm
	r     Rate
	burst int
	o     LeakyOptions
}

func paramsOf(l Limit) part {
	alg, r, burst, o := l.Params()
	return part{alg, r, burst, o}
}

func TestLimitParts(t *testing.T) {
	tests := []struct {
		name string
		l    Limit
		want []part
	}{
		{"zero", Limit{}, nil},
		{"invalid", TokenBucket(PerSecond(0), 1), nil},
		{"token bucket", TokenBucket(PerSecond(10), 20), []part{{throttle.TokenBucket, PerSecond(10), 20, LeakyOptions{}}}},
		{"leaky bucket", LeakyBucket(PerMinute(6), LeakyOptions{Queue: 3, MaxDelay: time.Second, Slack: 1}),
			[]part{{throttle.LeakyBucket, PerMinute(6), 0, LeakyOptions{Queue: 3, MaxDelay: time.Second, Slack: 1}}}},
		{"fixed window", FixedWindow(PerHour(100)), []part{{throttle.FixedWindow, PerHour(100), 0, LeakyOptions{}}}},
		{"sliding log", SlidingLog(PerSecond(5)), []part{{throttle.SlidingLog, PerSecond(5), 0, LeakyOptions{}}}},
		{"sliding counter", SlidingCounter(PerSecond(5)), []part{{throttle.SlidingCounter, PerSecond(5), 0, LeakyOptions{}}}},
		{"All flattened", All(TokenBucket(PerSecond(10), 10), Limit{}, All(SlidingLog(PerHour(1000)), FixedWindow(PerMinute(60)))),
			[]part{
				{throttle.TokenBucket, PerSecond(10), 10, LeakyOptions{}},
				{throttle.SlidingLog, PerHour(1000), 0, LeakyOptions{}},
				{throttle.FixedWindow, PerMinute(60), 0, LeakyOptions{}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []part
			for _, p := range tt.l.Parts() {
				got = append(got, paramsOf(p))
			}
			assert.Equal(t, tt.want, got)
			if len(tt.want) == 1 {
				assert.Equal(t, tt.want[0], paramsOf(tt.l), "Params of a Limit of one algorithm")
			}
		})
	}
}

// TestLimitParamsOfSeveral: a Limit of several parts, the zero Limit and an
// invalid one have no algorithm of their own.
func TestLimitParamsOfSeveral(t *testing.T) {
	for _, l := range []Limit{{}, TokenBucket(PerSecond(0), 1), All(TokenBucket(PerSecond(1), 1), FixedWindow(PerSecond(2)))} {
		assert.Equal(t, part{}, paramsOf(l), "%v", l)
	}
}
