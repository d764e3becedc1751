package asynqpace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/batch"
	"github.com/pacehttp/pace/internal/redact"
	"github.com/pacehttp/pace/internal/retryrule"
)

// DefaultDelay is how long a requeued task stays out of its queue when
// the throttle named no wait.
const DefaultDelay = time.Second

// RequeueError puts a task back in its queue for Delay.
// [RetryDelay] reads Delay; [IsFailure] says it is no failure.
// [Requeue] and [Handler] return it.
type RequeueError struct {
	Delay time.Duration // in (0, pace.DefaultMaxRetryAfter]
	Err   error         // the throttle: never nil
}

// wait is e's Delay held to (0, pace.DefaultMaxRetryAfter]: DefaultDelay
// for a nil e or a Delay of 0 or less.
func (e *RequeueError) wait() time.Duration {
	if e == nil || e.Delay <= 0 {
		return DefaultDelay
	}
	return min(e.Delay, pace.DefaultMaxRetryAfter)
}

// Error returns "asynqpace: requeued for Delay: Err".
func (e *RequeueError) Error() string {
	if e == nil {
		return "asynqpace: requeued"
	}
	return fmt.Sprintf("asynqpace: requeued for %v: %v", e.Delay, e.Err)
}

// Unwrap returns e.Err.
func (e *RequeueError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Requeue returns err as a [*RequeueError] when it is a throttle.
// A throttle is what [batch.Throttled] calls one.
// The server throttled the call, or a client-side limit refused it.
// Delay is the wait err names, or DefaultDelay when it names none.
// It is at most pace.DefaultMaxRetryAfter, whatever the server asked.
// An err that holds a *RequeueError already is returned as it is.
// [RetryDelay] holds its Delay to the same bounds.
// Any other err, nil included, is returned as it is.
func Requeue(err error) error {
	if err == nil {
		return nil
	}
	var re *RequeueError
	if errors.As(err, &re) {
		return err
	}
	d, ok := batch.Throttled(err, time.Now())
	if !ok {
		return err
	}
	if d <= 0 {
		d = DefaultDelay
	}
	return &RequeueError{Delay: min(d, pace.DefaultMaxRetryAfter), Err: err}
}

// RetryDelay returns an asynq.RetryDelayFunc for asynq.Config.
// A [*RequeueError] waits its Delay, rounded up to a whole second of the
// clock. A Delay of 0 or less, or a nil *RequeueError, waits DefaultDelay;
// one over pace.DefaultMaxRetryAfter waits that. asynq keeps the time a task is due in whole seconds, cut down;
// unrounded, a task would come back up to a second early.
// Any other error waits what next says; nil next means
// asynq.DefaultRetryDelayFunc. It is safe for concurrent use if next is.
func RetryDelay(next asynq.RetryDelayFunc) asynq.RetryDelayFunc {
	if next == nil {
		next = asynq.DefaultRetryDelayFunc
	}
	return func(n int, err error, t *asynq.Task) time.Duration {
		var re *RequeueError
		if errors.As(err, &re) {
			return wholeSecond(time.Now(), re.wait())
		}
		return next(n, err, t)
	}
}

// wholeSecond returns the wait from now to the first whole second of
// the clock at or after now + d.
func wholeSecond(now time.Time, d time.Duration) time.Duration {
	at := now.Add(d)
	s := at.Truncate(time.Second)
	if s.Before(at) {
		s = s.Add(time.Second)
	}
	return s.Sub(now)
}

// IsFailure returns a function for asynq.Config.IsFailure.
// A [*RequeueError] is no failure: asynq does not count it as a retry.
// Any other error is what next says; nil next means err != nil.
// It is safe for concurrent use if next is.
func IsFailure(next func(error) bool) func(error) bool {
	return func(err error) bool {
		var re *RequeueError
		if errors.As(err, &re) {
			return false
		}
		if next == nil {
			return err != nil
		}
		return next(err)
	}
}

// IdempotencyKey returns the idempotency key of the task ctx runs:
//
//	"pace-asynq-" + the first 24 hex digits of SHA-256("asynq\x00" + queue + "\x00" + task ID)
//
// It is the same on every run of the task and differs between tasks.
// It is "" when ctx is no asynq handler's context, or nil.
// [Handler] then sends no Idempotency-Key.
func IdempotencyKey(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	id, ok := asynq.GetTaskID(ctx)
	if !ok {
		return ""
	}
	q, _ := asynq.GetQueueName(ctx)
	return retryrule.DerivedKey("asynq", q+"\x00"+id)
}

// Handler returns an asynq.Handler that sends one request per task.
// build makes the task's request from ctx and the task.
// It should attach ctx (http.NewRequestWithContext), so that asynq can
// cancel the call.
// check judges the response; nil means batch.CheckResponse.
// The body is drained and closed after check returns.
//
// A pace.Transport in client does not sleep on a throttle for the task.
// It answers at once, and the task waits out the pause in its queue.
// A POST or PATCH without an Idempotency-Key gets [IdempotencyKey].
// Set the header to "" in build to send none.
// An error of client.Do loses the URL's query and user information.
// A throttle comes back as a [*RequeueError] (see [Requeue]).
// With a nil build, every task fails with a *pace.ConfigError (matching
// pace.ErrInvalidConfig) and asynq.SkipRetry, so asynq archives it at once.
// A nil client means http.DefaultClient.
// The handler is safe for concurrent use if build and check are.
func Handler(client *http.Client, build func(ctx context.Context, t *asynq.Task) (*http.Request, error), check func(*http.Response) error) asynq.Handler {
	if build == nil {
		err := fmt.Errorf("%w: %w", &pace.ConfigError{Field: "build", Reason: "asynqpace.Handler needs a function that builds each task's request"}, asynq.SkipRetry)
		return asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return err })
	}
	if client == nil {
		client = http.DefaultClient
	}
	if check == nil {
		check = batch.CheckResponse
	}
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		req, err := build(ctx, t)
		if err != nil {
			return err
		}
		if req == nil || req.URL == nil {
			return errNoRequest
		}
		retryrule.EnsureKey(req, func() string { return IdempotencyKey(ctx) })
		// The queue is the task's line: a pace.Transport hands a throttle
		// back at once, to be waited out in the queue, not in the worker.
		req = req.WithContext(retryrule.WithHandBack(req.Context(), retryrule.Pauses{}))
		resp, err := client.Do(req)
		if err != nil {
			return Requeue(redact.Error(err, false))
		}
		defer retryrule.Drain(resp.Body)
		return Requeue(check(resp))
	})
}

var errNoRequest = errors.New("asynqpace: build returned no request or no URL; nothing was sent")
