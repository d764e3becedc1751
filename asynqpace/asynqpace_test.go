package asynqpace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/batch"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/redislimit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequeue: which errors go back to the queue, and for how long.
func TestRequeue(t *testing.T) {
	assert.NoError(t, Requeue(nil))
	plain := errors.New("boom")
	assert.Same(t, plain, Requeue(plain))
	failed := &batch.StatusError{Code: 500}
	assert.Equal(t, error(failed), Requeue(failed))

	for _, tc := range []struct {
		name string
		err  error
		want time.Duration
	}{
		{"429 with Retry-After", &batch.ThrottledError{Status: 429, RetryAfter: 3 * time.Second}, 3 * time.Second},
		{"429 without a delay", &batch.ThrottledError{Status: 429}, DefaultDelay},
		// A server cannot keep a task out of its queue without bound.
		{"a day of Retry-After", &batch.ThrottledError{Status: 429, RetryAfter: 24 * time.Hour}, pace.DefaultMaxRetryAfter},
		{"limiter wait too long", &pace.WaitError{Key: "h", Delay: 7 * time.Second, Err: pace.ErrWaitTooLong}, 7 * time.Second},
		{"Redis unavailable", &pace.WaitError{Key: "h", Err: redislimit.ErrUnavailable}, DefaultDelay},
		{"pause refused after a 429", &url.Error{Op: "Post", URL: "http://h/", Err: &pace.AttemptsError{Attempts: 1, StatusCode: 429,
			Err: &pace.WaitError{Key: "h", Delay: 2 * time.Second, Err: pace.ErrWaitTooLong}}}, 2 * time.Second},
	} {
		err := Requeue(tc.err)
		var re *RequeueError
		require.ErrorAs(t, err, &re, tc.name)
		assert.Equal(t, tc.want, re.Delay, tc.name)
		assert.ErrorIs(t, err, tc.err, tc.name)
		assert.Same(t, err, Requeue(err), "%s: requeued once", tc.name)
		assert.False(t, IsFailure(nil)(err), tc.name)
		d := RetryDelay(nil)(3, err, nil)
		assert.GreaterOrEqual(t, d, tc.want, tc.name)
		assert.Less(t, d, tc.want+time.Second, tc.name)
	}
}

// TestWholeSecond: asynq stores when a task is due in whole Unix
// seconds, cut down (its rdb.Retry's processAt.Unix()). A delay rounded
// up to a whole second never brings the task back early.
func TestWholeSecond(t *testing.T) {
	now := time.Unix(100, 400_000_000)
	for d, want := range map[time.Duration]time.Duration{
		0:                         600 * time.Millisecond,
		600 * time.Millisecond:    600 * time.Millisecond,
		929 * time.Millisecond:    1600 * time.Millisecond,
		3 * time.Second:           3600 * time.Millisecond,
		pace.DefaultMaxRetryAfter: pace.DefaultMaxRetryAfter + 600*time.Millisecond,
	} {
		got := wholeSecond(now, d)
		assert.Equal(t, want, got, "delay %v", d)
		due := now.Add(got).Unix() // what asynq stores
		assert.False(t, time.Unix(due, 0).Before(now.Add(d)), "delay %v: due at %d s", d, due)
	}
}

// TestHooksPassOthersOn: errors that are no requeue go to next.
func TestHooksPassOthersOn(t *testing.T) {
	plain := errors.New("boom")
	assert.True(t, IsFailure(nil)(plain))
	assert.False(t, IsFailure(nil)(nil))
	assert.False(t, IsFailure(func(error) bool { return false })(plain))
	assert.Equal(t, 42*time.Second, RetryDelay(func(int, error, *asynq.Task) time.Duration { return 42 * time.Second })(0, plain, nil))
	assert.Equal(t, asynq.DefaultRetryDelayFunc(0, plain, nil) > 0, RetryDelay(nil)(0, plain, nil) > 0)
	assert.Empty(t, IdempotencyKey(context.Background()))
	h := Handler(nil, nil, nil)
	require.NotNil(t, h, "a nil build fails each task, not the mux")
	err := h.ProcessTask(context.Background(), asynq.NewTask("x", nil))
	assert.ErrorIs(t, err, pace.ErrInvalidConfig)
	assert.ErrorIs(t, err, asynq.SkipRetry)
}

// fleet is a redis-server and the asynq servers of a test on it.
type fleet struct {
	t     *testing.T
	redis asynq.RedisClientOpt
}

func newFleet(t *testing.T) *fleet {
	r := realserver.StartRedis(t)
	return &fleet{t: t, redis: asynq.RedisClientOpt{Addr: r.Addr()}}
}

// serve starts an asynq server, a worker process's, with handler for
// task type "call". hooks sets asynqpace's RetryDelay and IsFailure;
// without them asynq's defaults stand, but a quick retry delay.
func (f *fleet) serve(concurrency int, handler asynq.Handler, hooks bool) {
	f.t.Helper()
	quick := func(int, error, *asynq.Task) time.Duration { return 50 * time.Millisecond }
	cfg := asynq.Config{
		Concurrency:              concurrency,
		RetryDelayFunc:           quick,
		TaskCheckInterval:        20 * time.Millisecond,
		DelayedTaskCheckInterval: 50 * time.Millisecond,
		LogLevel:                 asynq.FatalLevel,
		Logger:                   quiet{},
	}
	if hooks {
		cfg.RetryDelayFunc, cfg.IsFailure = RetryDelay(quick), IsFailure(nil)
	}
	srv := asynq.NewServer(f.redis, cfg)
	mux := asynq.NewServeMux()
	mux.Handle("call", handler)
	require.NoError(f.t, srv.Start(mux))
	f.t.Cleanup(srv.Shutdown)
}

// enqueue enqueues n tasks "call" with payload i and the given options,
// and returns their IDs.
func (f *fleet) enqueue(n int, opts ...asynq.Option) []string {
	f.t.Helper()
	c := asynq.NewClient(f.redis)
	defer c.Close()
	var ids []string
	for i := range n {
		info, err := c.Enqueue(asynq.NewTask("call", []byte(strconv.Itoa(i))), append(opts, asynq.Retention(time.Hour))...)
		require.NoError(f.t, err)
		ids = append(ids, info.ID)
	}
	return ids
}

// settle waits until every task is completed or archived (30 s at most)
// and returns their infos.
func (f *fleet) settle(ids []string) []*asynq.TaskInfo {
	f.t.Helper()
	in := asynq.NewInspector(f.redis)
	defer in.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var infos []*asynq.TaskInfo
		for _, id := range ids {
			info, err := in.GetTaskInfo("default", id)
			require.NoError(f.t, err)
			if info.State != asynq.TaskStateCompleted && info.State != asynq.TaskStateArchived {
				break
			}
			infos = append(infos, info)
		}
		if len(infos) == len(ids) {
			return infos
		}
		require.False(f.t, time.Now().After(deadline), "tasks not done in 30 s")
		time.Sleep(20 * time.Millisecond)
	}
}

type quiet struct{}

func (quiet) Debug(...any) {}
func (quiet) Info(...any)  {}
func (quiet) Warn(...any)  {}
func (quiet) Error(...any) {}
func (quiet) Fatal(a ...any) {
	log.Fatal(a...)
}

// countingAPI answers POST /{id}: 429 with Retry-After: 1 to the first
// throttles requests, 200 after. It records each request's arrival and
// Idempotency-Key.
type countingAPI struct {
	*httptest.Server
	mu        sync.Mutex
	throttles int
	arrivals  []time.Time
	keys      map[string][]string // by task payload
}

func newAPI(t *testing.T, throttles int, status int) *countingAPI {
	a := &countingAPI{throttles: throttles, keys: map[string][]string{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.arrivals = append(a.arrivals, time.Now())
		a.keys[r.URL.Path[1:]] = append(a.keys[r.URL.Path[1:]], r.Header.Get("Idempotency-Key"))
		throttle := a.throttles > 0
		a.throttles--
		a.mu.Unlock()
		if throttle {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(status)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *countingAPI) handler(client *http.Client) asynq.Handler {
	return Handler(client, func(ctx context.Context, task *asynq.Task) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/"+string(task.Payload()), nil)
	}, nil)
}

// TestThrottledTaskSpendsNoRetry is hibiken/asynq#609's case: a task
// whose API call is throttled (429, or 503 with Retry-After, RFC 9110
// §10.2.3) goes back to the queue and spends none of its retries. Its
// MaxRetry is 1 and the API throttles it three times; asynq alone
// archives it. The worker does not sleep on a throttle: each one sends
// the task back to the queue, so the handler runs four times.
func TestThrottledTaskSpendsNoRetry(t *testing.T) {
	for _, tc := range []struct {
		status int
		hooks  bool
	}{{429, true}, {503, true}, {429, false}} {
		t.Run(fmt.Sprintf("%d hooks=%v", tc.status, tc.hooks), func(t *testing.T) {
			f := newFleet(t)
			api := newAPI(t, 3, tc.status)
			h := api.handler(&http.Client{Transport: &pace.Transport{}})
			var runs atomic.Int32
			f.serve(2, asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
				runs.Add(1)
				return h.ProcessTask(ctx, task)
			}), tc.hooks)
			info := f.settle(f.enqueue(1, asynq.MaxRetry(1)))[0]
			if !tc.hooks {
				assert.Equal(t, asynq.TaskStateArchived, info.State, "asynq's defaults archive it")
				return
			}
			assert.Equal(t, asynq.TaskStateCompleted, info.State, info.LastErr)
			assert.Zero(t, info.Retried, "retries spent")
			// A worker that slept on a throttle would run it twice.
			assert.GreaterOrEqual(t, runs.Load(), int32(4), "runs of the handler")
			api.mu.Lock()
			defer api.mu.Unlock()
			require.Len(t, api.arrivals, 4)
			for i := 1; i < 4; i++ {
				// Each comes back after the key's pause (1 s), not before.
				assert.GreaterOrEqual(t, api.arrivals[i].Sub(api.arrivals[i-1]), 950*time.Millisecond, "arrival %d", i)
			}
		})
	}
}

// TestLimiterShared: two asynq servers, each with its own redislimit
// Limiter on the same Redis, keep one limit of 1 request in any second
// between them, as counted by the API. A task the limiter would make
// wait more than MaxWait goes back to the queue, spending no retry.
func TestLimiterShared(t *testing.T) {
	f := newFleet(t)
	api := newAPI(t, 0, 0)
	for range 2 {
		rdb := redis.NewClient(&redis.Options{Addr: f.redis.Addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = rdb.Close() })
		lim, err := redislimit.New(rdb, pace.SlidingLog(pace.PerSecond(1)), redislimit.Options{Prefix: "t:", Margin: 10 * time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() { _ = lim.Close() })
		tr := &pace.Transport{Limiter: lim, MaxWait: 200 * time.Millisecond}
		f.serve(3, api.handler(&http.Client{Transport: tr}), true)
	}
	infos := f.settle(f.enqueue(5, asynq.MaxRetry(1)))
	for _, info := range infos {
		assert.Equal(t, asynq.TaskStateCompleted, info.State, info.LastErr)
		assert.Zero(t, info.Retried, "retries spent")
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	require.Len(t, api.arrivals, 5)
	for i := 1; i < len(api.arrivals); i++ {
		assert.GreaterOrEqual(t, api.arrivals[i].Sub(api.arrivals[i-1]), 950*time.Millisecond, "arrival %d", i)
	}
}

// TestIdempotencyKeyStable: every run of a task sends the same
// Idempotency-Key (draft-ietf-httpapi-idempotency-key-header), and two
// tasks send two keys. The API fails each task's first call with a 500,
// which asynq retries.
func TestIdempotencyKeyStable(t *testing.T) {
	f := newFleet(t)
	api := newAPI(t, 2, http.StatusInternalServerError)
	var mu sync.Mutex
	seen := map[string]string{}
	h := api.handler(&http.Client{Transport: &pace.Transport{}})
	f.serve(1, asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		mu.Lock()
		id, _ := asynq.GetTaskID(ctx)
		seen[id] = IdempotencyKey(ctx)
		mu.Unlock()
		return h.ProcessTask(ctx, task)
	}), true)
	ids := f.enqueue(2)
	for _, info := range f.settle(ids) {
		assert.Equal(t, asynq.TaskStateCompleted, info.State, info.LastErr)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	var keys []string
	for i, id := range ids {
		sent := api.keys[strconv.Itoa(i)]
		require.NotEmpty(t, sent)
		for _, k := range sent {
			assert.Equal(t, seen[id], k, "task %d", i)
		}
		keys = append(keys, seen[id])
	}
	assert.Equal(t, 4, len(api.arrivals), "two tasks, each failed once")
	assert.NotEqual(t, keys[0], keys[1])
	assert.Regexp(t, `^pace-asynq-[0-9a-f]{24}$`, keys[0])
}
