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
	// item is not failed but goes back in line, due again after
	// batch.Options.Backoff (1 s by default; the refusal names no delay),
	// the same wait after every refusal, never doubled, at most
	// batch.Options.MaxBackoff; the key's other attempts in the run wait as
	// long, and no key is paused. It is tried again so until it is done or
	// the run ends. Test it with errors.Is.
	ErrUnavailable = fmt.Errorf("%w: redislimit: Redis unavailable", pace.ErrRateLimited)

	// ErrUnexpectedReply means a script's reply had a shape the scripts
	// never return: something that speaks Redis's protocol and accepted the
	// script (a proxy, an emulation of Redis) answered it otherwise, or
	// rewrote the reply. An address that is no Redis server at all usually
	// fails earlier, in go-redis's connection handshake (HELLO), with plain
	// ErrUnavailable. It wraps ErrUnavailable, so the failure policy
	// applies to it.
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
