package batch

import (
	"testing"
	"time"

	"github.com/pacehttp/pace"
)

func TestRateIdeal(t *testing.T) {
	tests := []struct {
		r    pace.Rate
		m    int
		want time.Duration
	}{
		{pace.Rate{}, 100, 0},
		{pace.Rate{N: 5, Per: time.Second}, 0, 0},
		{pace.Rate{N: 5, Per: time.Second}, 1, 0},
		{pace.Rate{N: 5, Per: time.Second}, 5, 0},
		{pace.Rate{N: 5, Per: time.Second}, 6, time.Second},
		{pace.Rate{N: 5, Per: time.Second}, 300, 59 * time.Second},
		{pace.Rate{N: 1, Per: 10 * time.Millisecond}, 300, 2990 * time.Millisecond},
		{pace.Rate{N: 1, Per: time.Duration(1 << 62)}, 3, maxDuration},
	}
	for _, tt := range tests {
		if got := ideal(tt.r, tt.m); got != tt.want {
			t.Errorf("ideal(%v, %d) = %v, want %v", tt.r, tt.m, got, tt.want)
		}
	}
}
