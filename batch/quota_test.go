package batch

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace"
)

// quotaServer stands in for an API that admits limit requests per rolling
// window (counting admitted requests only) and answers every other request
// with 429 and no Retry-After. It records every arrival.
type quotaServer struct {
	limit   int
	window  time.Duration
	latency time.Duration

	mu       sync.Mutex
	admitted []time.Time // arrival times of admitted requests
	sends    []time.Time // arrival times of every request
	sendItem []int       // the item of each request
	ok       map[int]int // admitted requests per item
	refused  int         // 429s answered
}

func (s *quotaServer) call(ctx context.Context, item int) error {
	s.mu.Lock()
	now := time.Now()
	s.sends = append(s.sends, now)
	s.sendItem = append(s.sendItem, item)
	inWindow := 0
	for _, t := range s.admitted {
		if now.Sub(t) < s.window {
			inWindow++
		}
	}
	admit := inWindow < s.limit
	if admit {
		s.admitted = append(s.admitted, now)
		s.ok[item]++
	} else {
		s.refused++
	}
	s.mu.Unlock()
	time.Sleep(s.latency)
	if !admit {
		RecordStatus(ctx, 429)
		return &ThrottledError{Status: 429}
	}
	RecordStatus(ctx, 200)
	return nil
}

// maxInWindow returns the most times in any half-open window [t, t+d).
func maxInWindow(times []time.Time, d time.Duration) int {
	most := 0
	for i, t := range times {
		n := 0
		for _, u := range times[i:] {
			if !u.Before(t) && u.Sub(t) < d {
				n++
			}
		}
		for _, u := range times[:i] {
			if !u.Before(t) && u.Sub(t) < d {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// TestQuotaExhausted is GSA/sam_api#51: a 300-item
// batch with a ceiling of 5/s (burst 5) against a server that allows 100
// requests per rolling 60 s and then answers 429 without Retry-After. The
// batch must stop sending new items after the first 429 and send at most one
// probe per pause; at most 10 429s in all (a naive loop gets about 200);
// every item succeeds exactly once; never more than 5 sends in any 1 s.
func TestQuotaExhausted(t *testing.T) {
	for _, latency := range []time.Duration{0, 50 * time.Millisecond, 300 * time.Millisecond} {
		t.Run(latency.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &quotaServer{limit: 100, window: time.Minute, latency: latency, ok: map[int]int{}}
				items := make([]int, 300)
				for i := range items {
					items[i] = i
				}
				type pauseSpan struct{ from, to time.Time }
				var pauses []pauseSpan
				opts := Options{
					Rate: pace.Rate{N: 5, Per: time.Second},
					OnProgress: func(p Progress) {
						switch {
						case p.Index >= 0:
						case p.Paused && (len(pauses) == 0 || !pauses[len(pauses)-1].to.IsZero()):
							pauses = append(pauses, pauseSpan{from: time.Now()})
						case !p.Paused:
							pauses[len(pauses)-1].to = time.Now()
						}
					},
				}
				rep, err := Run(t.Context(), items, srv.call, opts)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if srv.refused > 10 {
					t.Errorf("server answered %d 429s, want <= 10", srv.refused)
				}
				if rep.Summary.Pauses != 1 {
					t.Errorf("%d pauses, want 1: after it the learned allowance keeps the quota from running out again", rep.Summary.Pauses)
				}
				if got := rep.Summary.Throttled; got != srv.refused {
					t.Errorf("Summary.Throttled = %d, want %d (the server's count)", got, srv.refused)
				}
				for i := range items {
					if srv.ok[i] != 1 {
						t.Errorf("item %d admitted %d times, want exactly 1", i, srv.ok[i])
					}
					if res := rep.Results[i]; res.Outcome != Succeeded || res.Status != 200 {
						t.Errorf("item %d: %v status %d, want succeeded 200", i, res.Outcome, res.Status)
					}
				}
				if got := maxInWindow(srv.sends, time.Second); got > 5 {
					t.Errorf("%d sends in one 1 s window, want <= 5", got)
				}
				// While paused, the only sends are probes: one at a time,
				// each after the previous probe's answer and its pause. (The
				// probe is whichever attempt asks first when the pause ends,
				// not always the same item.)
				for _, p := range pauses {
					var probes []int
					for k, at := range srv.sends {
						if at.After(p.from) && (p.to.IsZero() || at.Before(p.to)) {
							probes = append(probes, k)
						}
					}
					if len(probes) == 0 {
						t.Errorf("pause at %v: no probe", p.from)
					}
					for j, k := range probes {
						if j > 0 && srv.sends[k].Sub(srv.sends[probes[j-1]]) < time.Second+latency {
							t.Errorf("pause at %v: probes %v apart, want >= %v",
								p.from, srv.sends[k].Sub(srv.sends[probes[j-1]]), time.Second+latency)
						}
					}
				}
				t.Logf("429s %d, pauses %d, elapsed %v, ideal %v",
					srv.refused, rep.Summary.Pauses, rep.Summary.Elapsed, rep.Summary.Ideal)
			})
		})
	}
}
