package retrydecide

import (
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/pacehttp/pace/retry"
)

// Schedule is one request's backoff schedule and its key's share of the
// retry budget. The Transport makes one at a request's first failure, so
// that a request that never fails costs nothing. It is used by the
// request's goroutine only.
type Schedule struct {
	p             *Executor
	budget        *Budget // nil: no budget
	key           string
	maxRetryAfter time.Duration
	bo            backoff.BackOff // made at the first backoff
	floor         time.Duration   // shortest backoff wait
	cap           time.Duration   // longest backoff wait
	prevWait      time.Duration   // the last backoff wait, for decorrelated jitter
}

// NewSchedule returns the schedule of a request of key: p's backoff,
// waits capped at maxRetryAfter, retries taken from budget (nil: none).
func (p *Executor) NewSchedule(budget *Budget, key string, maxRetryAfter time.Duration) *Schedule {
	return &Schedule{p: p, budget: budget, key: key, maxRetryAfter: maxRetryAfter}
}

// Withdraw takes a retry from the key's budget at now, with force even
// when the budget is spent; it reports whether the budget allowed it, which
// is always true without a budget.
func (s *Schedule) Withdraw(now time.Time, force bool) bool {
	if s.budget == nil {
		return true
	}
	return s.budget.Withdraw(s.key, now, force)
}

// Next returns the wait before the next attempt, jittered; ok is false
// when the schedule says stop. throttled selects the default schedule for
// a 429 or 503 without a delay (retry.DefaultThrottleBackoffInitial first)
// over the one for other failures (retry.DefaultBackoffInitial first); its
// waits are capped at the lower of retry.DefaultBackoffMax and
// MaxRetryAfter. A schedule from retry.Policy.NewBackOff is used as given,
// with waits from 1ns up to MaxRetryAfter.
func (s *Schedule) Next(throttled bool) (time.Duration, bool) {
	if s.bo == nil {
		if nb := s.p.Policy.NewBackOff; nb != nil {
			s.bo, s.floor, s.cap = nb(), 1, s.maxRetryAfter
			if s.bo != nil {
				s.bo.Reset()
			}
		} else {
			initial := retry.DefaultBackoffInitial
			if throttled {
				initial = retry.DefaultThrottleBackoffInitial
			}
			s.bo = NewBackOff(initial, retry.DefaultBackoffMax)
			s.cap = min(retry.DefaultBackoffMax, s.maxRetryAfter)
			s.floor = min(BackoffFloor(initial, throttled), s.cap)
		}
	}
	w, ok := Wait(s.bo, s.p.Policy.Jitter, s.prevWait, s.floor, s.cap, nil)
	if ok {
		s.prevWait = w
	}
	return w, ok
}
