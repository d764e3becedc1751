package middleware

import (
	"math"
	"testing"
	"time"

	"github.com/pacehttp/pace"
)

func TestSeconds(t *testing.T) {
	tests := []struct {
		d          time.Duration
		secs, wait int64 // seconds(d), retryAfter(d)
	}{
		{-time.Second, 0, 1},
		{0, 0, 1},
		{time.Nanosecond, 1, 1},
		{time.Second, 1, 1},
		{time.Second + time.Nanosecond, 2, 2},
		{59*time.Second + 999*time.Millisecond, 60, 60},
		{math.MaxInt64, 9223372037, 9223372037},
	}
	for _, tt := range tests {
		if got, wait := seconds(tt.d), retryAfter(tt.d); got != tt.secs || wait != tt.wait {
			t.Errorf("seconds(%v), retryAfter(%v) = %d, %d, want %d, %d", tt.d, tt.d, got, wait, tt.secs, tt.wait)
		}
	}
	if got := secondsDuration(9223372037); got != math.MaxInt64 {
		t.Errorf("secondsDuration(9223372037) = %v, want the largest Duration", got)
	}
}

func TestPolicyWindow(t *testing.T) {
	tests := []struct {
		limit  int
		window time.Duration
		q, w   int64
	}{
		{100, time.Minute, 100, 60},
		{5, 500 * time.Millisecond, 10, 1},              // token bucket 10/s burst 5
		{1, time.Millisecond, 1000, 1},                  // token bucket 1000/s burst 1
		{1, 3 * time.Millisecond, 333, 1},               // rounded down: never above the rate
		{100, 1500 * time.Millisecond, 133, 2},          // w rounded up, q scaled
		{3, 2*time.Second + 1, 4, 3},                    // ⌊3·3s/(2s+1ns)⌋
		{math.MaxInt, time.Nanosecond, maxSFInteger, 1}, // capped at 15 digits
		{math.MaxInt, time.Hour, maxSFInteger, 3600},
	}
	for _, tt := range tests {
		if q, w := policyWindow(tt.limit, tt.window); q != tt.q || w != tt.w {
			t.Errorf("policyWindow(%d, %v) = q=%d w=%d, want q=%d w=%d", tt.limit, tt.window, q, w, tt.q, tt.w)
		}
	}
}

func TestSFString(t *testing.T) {
	for in, want := range map[string]string{
		"default":        `"default"`,
		``:               `""`,
		`a "quoted" one`: `"a \"quoted\" one"`,
		`back\slash`:     `"back\\slash"`,
	} {
		if got := sfString(in); got != want {
			t.Errorf("sfString(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestRateLimitField checks t: Reset while units remain, Wait when none do,
// capped at maxT (a refusal's Retry-After), and the cap on huge values.
func TestRateLimitField(t *testing.T) {
	one := policiesOf("p", pace.Quota{Limit: 10, Window: time.Second})
	two := policiesOf("p", pace.Quota{Parts: []pace.Quota{{Limit: 1, Window: time.Second}, {Limit: 9, Window: time.Hour}}})
	tests := []struct {
		ps   []policy
		q    pace.Quota
		maxT int64
		want string
	}{
		{one, pace.Quota{Remaining: 3, Reset: 1500 * time.Millisecond}, math.MaxInt64, `"p";r=3;t=2`},
		{one, pace.Quota{Remaining: 0, Reset: time.Hour, Wait: 10 * time.Millisecond}, math.MaxInt64, `"p";r=0;t=1`},
		{one, pace.Quota{Remaining: 10}, math.MaxInt64, `"p";r=10;t=0`},
		{one, pace.Quota{Remaining: math.MaxInt, Reset: math.MaxInt64}, math.MaxInt64, `"p";r=999999999999999;t=9223372037`},
		{two, pace.Quota{Parts: []pace.Quota{{Wait: 2 * time.Second}, {Remaining: 4, Reset: time.Minute}}}, math.MaxInt64, `"p-1";r=0;t=2, "p-2";r=4;t=60`},
		{two, pace.Quota{Parts: []pace.Quota{{Wait: 2 * time.Second}, {Remaining: 4, Reset: time.Minute}}}, 2, `"p-1";r=0;t=2, "p-2";r=4;t=2`},
	}
	for _, tt := range tests {
		if got := rateLimitField(tt.ps, tt.q, tt.maxT); got != tt.want {
			t.Errorf("rateLimitField(%+v) = %s, want %s", tt.q, got, tt.want)
		}
	}
}
