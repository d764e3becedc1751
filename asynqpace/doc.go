// Package asynqpace runs HTTP calls as tasks of github.com/hibiken/asynq.
// Every worker process shares one limit and one pause per key.
// Set a pace.Transport whose Limiter is a redislimit.Limiter on the
// Redis that asynq uses; each process makes its own.
//
// A task the limiter would make wait too long goes back to the queue.
// So does a task the API throttled (a 429, or a 503 with a delay).
// It comes back after the key's pause, or the wait the limiter named.
// Such a task is not a failure and uses up none of its retries.
// This takes both hooks of asynq.Config:
//
//	srv := asynq.NewServer(redisOpt, asynq.Config{
//		RetryDelayFunc: asynqpace.RetryDelay(nil),
//		IsFailure:      asynqpace.IsFailure(nil),
//	})
//	mux := asynq.NewServeMux()
//	mux.Handle("charge", asynqpace.Handler(client, build, nil))
//
// The rule of what is a throttle is package batch's ([batch.Throttled]).
// asynq archives a task whose retries are spent on any error.
// So give tasks a MaxRetry of at least 1 (asynq's default is 25).
// asynq moves a requeued task back only every
// Config.DelayedTaskCheckInterval (5 s by default): set it lower.
// asynq counts due times in whole seconds, so [RetryDelay] rounds up.
// A task then comes back up to a second after its pause, never before.
//
// A POST or PATCH gets an Idempotency-Key derived from the task's queue
// and ID ([IdempotencyKey]). Every run of a task sends the same key.
// So an API that deduplicates by key charges a retried task once.
// That holds after a worker is killed mid-call too.
// asynq then runs the task again once its lease has expired.
// In asynq v0.26 that takes one to two minutes, not configurable.
// The lease lasts 30 s; 30 s of grace follow; a check runs each minute.
// Then asynq's default retry delay adds 15 s or more.
// A next for [RetryDelay] may return less for asynq.ErrLeaseExpired.
package asynqpace
