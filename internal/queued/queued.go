// Package queued marks the requests of a caller that keeps its own line of
// waiting work (package batch's HTTP). pace.Transport hands such a
// request's throttle back at once instead of sleeping on it: a request of
// a paused key is refused, nothing sent, and a throttled answer is
// returned, not retried. The caller then waits out the pause in its own
// line, holding none of its concurrency slots.
package queued

import "context"

type key struct{}

// With returns ctx marked as queued.
func With(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, true) }

// Is reports whether ctx is marked as queued.
func Is(ctx context.Context) bool {
	v, _ := ctx.Value(key{}).(bool)
	return v
}
