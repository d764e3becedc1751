// Package wake holds the one timed wait that package pace's Keyed and
// package redislimit's Limiter both use: a sleep that a closed channel
// (a pause announced, a probe answered) or the end of a context cuts short.
package wake

import (
	"context"
	"time"
)

// Sleep waits d, or until wake is closed (a nil wake never is), whichever
// comes first, and returns nil; if ctx ends first it returns ctx.Err().
// Callers wrap that error in their own terms (a *pace.WaitError, a
// deadline error of their package). Safe for concurrent use.
func Sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
