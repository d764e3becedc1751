package pace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLimitParts(t *testing.T) {
	tests := []struct {
		name string
		l    Limit
		want []Part
	}{
		{"zero", Limit{}, nil},
		{"invalid", Bucket(PerSecond(0), 1), nil},
		{"token bucket", Bucket(PerSecond(10), 20), []Part{{Algorithm: "token bucket", Rate: PerSecond(10), Burst: 20}}},
		{"leaky bucket", LeakyWith(PerMinute(6), LeakyOptions{Queue: 3, MaxDelay: time.Second, Slack: 1}),
			[]Part{{Algorithm: "leaky bucket", Rate: PerMinute(6), Leaky: LeakyOptions{Queue: 3, MaxDelay: time.Second, Slack: 1}}}},
		{"fixed window", Fixed(PerHour(100)), []Part{{Algorithm: "fixed window", Rate: PerHour(100)}}},
		{"sliding log", Sliding(PerSecond(5)), []Part{{Algorithm: "sliding log", Rate: PerSecond(5)}}},
		{"sliding counter", SlidingApprox(PerSecond(5)), []Part{{Algorithm: "sliding counter", Rate: PerSecond(5)}}},
		{"All flattened", All(Bucket(PerSecond(10), 10), Limit{}, All(Sliding(PerHour(1000)), Fixed(PerMinute(60)))),
			[]Part{
				{Algorithm: "token bucket", Rate: PerSecond(10), Burst: 10},
				{Algorithm: "sliding log", Rate: PerHour(1000)},
				{Algorithm: "fixed window", Rate: PerMinute(60)},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.l.Parts())
		})
	}
}

func TestLimitPartsIsACopy(t *testing.T) {
	l := All(Bucket(PerSecond(10), 10), Fixed(PerMinute(60)))
	ps := l.Parts()
	ps[0].Burst = 1
	assert.Equal(t, 10, l.Parts()[0].Burst)
}
