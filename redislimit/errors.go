package redislimit

import (
	"context"
	"errors"
	"fmt"

	"github.com/pacehttp/pace"
)

var (
	// ErrUnavailable means Redis could not decide within [Options].Timeout
	// (it is down, slow, or answered with an error), and the Limiter, set
	// to fail closed (no [Options].Fallback), refused the request: nothing
	// was sent. It comes inside a *pace.WaitError with the cause in its
	// text, and wraps pace.ErrRateLimited, so that a pace.Transport returns
	// it at once and package batch treats it as a client-side refusal: the
	// item is not failed but goes back in line, its key paused for the
	// batch's backoff (batch.Options.Backoff, doubled on each refusal in a
	// row), and is tried again until it is done or the run ends. Test it
	// with errors.Is.
	ErrUnavailable = fmt.Errorf("%w: redislimit: Redis unavailable", pace.ErrRateLimited)

	// ErrUnexpectedReply means Redis answered a script with a reply of a
	// shape the scripts never return: the address is not a Redis server, or
	// something between rewrote the reply. It wraps ErrUnavailable, so the
	// failure policy applies to it.
	ErrUnexpectedReply = fmt.Errorf("%w: unexpected reply", ErrUnavailable)

	// ErrBadKey means Wait was given an empty key, or one starting with
	// "}": Redis Cluster would then hash each of the decision's keys on its
	// own (an empty hash tag), and they could land in different slots. It
	// comes inside a *pace.WaitError; nothing is booked. It does not match
	// pace.ErrRateLimited: it is the caller's bug, and package batch fails
	// the item.
	ErrBadKey = errors.New("redislimit: key must be non-empty and must not start with '}'")
)

// errDeadline is the Err of a refusal because of the context's deadline:
// it matches both pace.ErrWaitExceedsDeadline and context.DeadlineExceeded,
// as package pace's own.
var errDeadline = fmt.Errorf("%w: %w", pace.ErrWaitExceedsDeadline, context.DeadlineExceeded)

// refusal maps a refusal's reason to its error: 2 the queue is full, 3
// the wait would outlast the deadline, any other the wait is too long.
func refusal(reason int64) error {
	switch reason {
	case 2:
		return pace.ErrQueueFull
	case 3:
		return errDeadline
	}
	return pace.ErrWaitTooLong
}
