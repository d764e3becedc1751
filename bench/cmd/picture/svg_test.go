package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSVGMarksEvery429: each arrival is one tick, each second with a 429
// has a red bar, and the limit line is drawn at the rate.
func TestSVGMarksEvery429(t *testing.T) {
	r := run{name: "x", elapsed: 2 * time.Second}
	for i := range 20 {
		status := http.StatusOK
		if i%7 == 3 { // at 0.3 s, 1.0 s, 1.7 s
			status = http.StatusTooManyRequests
		}
		r.arrivals = append(r.arrivals, arrival{at: time.Duration(i) * 100 * time.Millisecond, status: status})
	}
	s := svg([]run{r}, 10, []string{"caption"})
	assert.Equal(t, 2, strings.Count(s, `class="refused"`), "red bars: seconds 0 and 1")
	assert.Equal(t, 3, strings.Count(s, `stroke="#d62728"`), "red ticks, one per 429")
	assert.Equal(t, 17, strings.Count(s, `stroke="#4a7ebb"`), "blue ticks, one per 200")
	assert.Contains(t, s, "limit 10/s")
	assert.Contains(t, s, "3 × 429")
}
