package main

import (
	"strings"
	"testing"

	"github.com/pacehttp/pace/batch"
)

// TestSummaryThrottledReconciles: the batch-level Throttled count and the
// 429s the client saw differ, and the summary says why: 14 429s all retried
// by the Transport show 0 at the batch with the reason, never a bare
// "Throttled: 0"; limiter refusals, which no server saw, count at the batch.
func TestSummaryThrottledReconciles(t *testing.T) {
	for _, tt := range []struct {
		name      string
		client429 int64
		throttled int
		want      string
	}{
		{"all retried by the Transport", 14, 0, "0 attempts reached the batch (batch-level Throttled: 429s the Transport gave back after its own attempts, plus calls pace's limiter refused before sending); the Transport retried all 14 429s itself"},
		{"limiter refusals only", 0, 3, "3 attempts reached the batch (batch-level Throttled: 429s the Transport gave back"},
		{"none", 0, 0, "0 attempts reached the batch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			tally{Summary: batch.Summary{Items: 1, Succeeded: 1, Throttled: tt.throttled}, local: true, client429: tt.client429}.print(&b)
			row := ""
			for _, line := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(line, "  throttled  ") {
					row = strings.TrimPrefix(line, "  throttled  ")
				}
			}
			if !strings.HasPrefix(row, tt.want) {
				t.Errorf("throttled row %q, want it to start with %q", row, tt.want)
			}
		})
	}
}
