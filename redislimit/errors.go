package redislimit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pacehttp/pace"
)

var (
	// ErrUnavailable means Redis could not decide within [Options].Timeout: it
	// is down, slow, or answered with an error. The Limiter, set to fail
	// closed (no [Options].Fallback), refused the request: nothing was sent.
	// It comes inside a *pace.WaitError with the cause in its text. It wraps
	// pace.ErrRateLimited, so that a pace.Transport returns it at once. Package
	// batch treats it as a client-side refusal. The item is not failed, but
	// goes back in line. It is due again after batch.Options.Backoff (1 s by
	// default; the refusal names no delay). That is the same wait after every
	// refusal, never doubled, at most batch.Options.MaxBackoff. The key's other
	// attempts in the run wait as long, and no key is paused. It is tried
	// again so until it is done or the run ends. Test it with errors.Is.
	ErrUnavailable = fmt.Errorf("%w: redislimit: Redis unavailable", pace.ErrRateLimited)

	// ErrUnexpectedReply means a script's reply had a shape the scripts never
	// return. Something that speaks Redis's protocol and accepted the script (a
	// proxy, an emulation of Redis) answered it otherwise, or rewrote the
	// reply. An address that is no Redis server at all usually fails earlier,
	// with plain ErrUnavailable, in go-redis's connection handshake (HELLO).
	// It wraps ErrUnavailable, so the failure policy applies to it.
	ErrUnexpectedReply = fmt.Errorf("%w: unexpected reply", ErrUnavailable)

	// ErrBadState means a key the Limiter keeps in Redis holds a value of
	// another type: someone else's data under the Limiter's Prefix, or the
	// state of a Limiter with another Limit under the same Prefix. That is
	// a hash, a list or a set,
	// where the Limiter keeps a string or a sorted set.
	// The Limiter leaves it alone and books nothing. The error, inside a
	// *pace.WaitError, names the Redis key, with "{key}" in place of the Wait's
	// key or its hash (the key may be a secret). It is reported by a key's
	// first decision, or its first after it idled. A busy key's decision
	// checks no type (docs/fleet.md, "State in Redis").
	//
	// It is not Redis failing: it does not match ErrUnavailable or
	// pace.ErrRateLimited. The Fallback limiter is not asked, and package batch
	// fails the item. Choose a Prefix of its own for the Limiter, or delete the
	// key. Some values of the Limiter's own types no decision could have
	// written: a number out of range, a string that is no number. They are not
	// errors: the scripts repair them (docs/fleet.md). Test it with errors.Is.
	ErrBadState = errors.New("redislimit: a key holds another type")

	// ErrClosed fails a Wait on a Limiter after its Close, inside a
	// *pace.WaitError. It is no throttle (it does not match
	// pace.ErrRateLimited): package batch fails the item, as for a bug,
	// instead of putting it back in line for ever. Test it with errors.Is.
	ErrClosed = errors.New("redislimit: the Limiter is closed")
)

// badState returns the error of a decision that found KEYS[index] (keys
// holds them, from 1) of another type. It names the Redis key with
// "{key}" in place of the key's tag, which may be a secret (the
// WaitError shows it as a fingerprint).
func badState(keys []string, index int64) error {
	if index < 1 || index > int64(len(keys)) {
		return fmt.Errorf("%w: %w", ErrUnexpectedReply, ErrBadState)
	}
	k := keys[index-1]
	open, end := strings.IndexByte(k, '{'), strings.LastIndex(k, "}:")
	if open < 0 || end < open {
		return fmt.Errorf("%w: %w", ErrUnexpectedReply, ErrBadState)
	}
	return fmt.Errorf("%w: %s{key}%s", ErrBadState, k[:open], k[end+1:])
}

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
