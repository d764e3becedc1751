package redislimit

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/batch"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewRejects: settings the scripts cannot hold exactly are refused
// with a *pace.ConfigError naming them, before anything reaches Redis.
func TestNewRejects(t *testing.T) {
	srv, rdb := startRedis(t)
	noCtx := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer noCtx.Close()
	tests := []struct {
		name  string
		rdb   redis.UniversalClient
		l     pace.Limit
		o     Options
		field string
	}{
		{"nil client", nil, pace.TokenBucket(pace.PerSecond(1), 1), Options{}, "rdb"},
		{"client ignoring contexts", noCtx, pace.TokenBucket(pace.PerSecond(1), 1), Options{}, "rdb"},
		{"prefix with {", rdb, pace.TokenBucket(pace.PerSecond(1), 1), Options{Prefix: "a{b"}, "Prefix"},
		{"prefix with }", rdb, pace.TokenBucket(pace.PerSecond(1), 1), Options{Prefix: "a}"}, "Prefix"},
		{"typed nil *redis.Client", (*redis.Client)(nil), pace.TokenBucket(pace.PerSecond(1), 1), Options{}, "rdb"},
		{"typed nil *redis.ClusterClient", (*redis.ClusterClient)(nil), pace.TokenBucket(pace.PerSecond(1), 1), Options{}, "rdb"},
		{"negative timeout", rdb, pace.TokenBucket(pace.PerSecond(1), 1), Options{Timeout: -1}, "Timeout"},
		{"a timeout no round trip fits in", rdb, pace.TokenBucket(pace.PerSecond(1), 1), Options{Timeout: time.Nanosecond}, "Timeout"},
		{"a timeout whose multiples overflow", rdb, pace.TokenBucket(pace.PerSecond(1), 1), Options{Timeout: 1 << 62}, "Timeout"},
		{"a timeout of 1<<62 with a lease", rdb, pace.TokenBucket(pace.PerSecond(1), 1), Options{Timeout: 1 << 62, Lease: time.Second}, "Timeout"},
		{"a timeout over an hour", rdb, pace.TokenBucket(pace.PerSecond(1), 1), Options{Timeout: time.Hour + time.Second}, "Timeout"},
		{"negative probe lease", rdb, pace.TokenBucket(pace.PerSecond(1), 1), Options{ProbeLease: -1}, "ProbeLease"},
		{"invalid limit", rdb, pace.TokenBucket(pace.PerSecond(0), 1), Options{}, "Rate.N"},
		{"sliding counter", rdb, pace.SlidingCounter(pace.PerSecond(1)), Options{}, "Limit"},
		{"faster than 1/µs", rdb, pace.TokenBucket(pace.PerSecond(2_000_000), 1), Options{}, "Rate"},
		{"fixed window under 1 µs", rdb, pace.FixedWindow(pace.Rate{N: 1, Per: time.Nanosecond}), Options{}, "Rate.Per"},
		{"fixed window of 1e9 per ns", rdb, pace.FixedWindow(pace.Rate{N: 1e9, Per: time.Nanosecond}), Options{}, "Rate.Per"},
		{"sliding log under 1 µs", rdb, pace.SlidingLog(pace.Rate{N: 1, Per: 999 * time.Nanosecond}), Options{}, "Rate.Per"},
		{"window under 1 µs in All", rdb, pace.All(pace.TokenBucket(pace.PerSecond(1), 1), pace.FixedWindow(pace.Rate{N: 1, Per: time.Nanosecond})), Options{}, "Rate.Per"},
		{"bucket span beyond 2^50 µs", rdb, pace.TokenBucket(pace.PerHour(1), 400_000), Options{}, "Burst"},
		{"period beyond 2^50 µs", rdb, pace.FixedWindow(pace.Rate{N: 1, Per: 40 * 365 * 24 * time.Hour}), Options{}, "Rate.Per"},
		{"leaky queue beyond 2^50 µs", rdb, pace.LeakyBucket(pace.PerHour(1), pace.LeakyOptions{Queue: 400_000}), Options{}, "Queue"},
		{"sliding log too long", rdb, pace.SlidingLog(pace.PerSecond(maxSlidingN + 1)), Options{}, "Rate.N"},
		{"more parts than a script holds", rdb, pace.All(manyParts(maxParts + 1)...), Options{}, "Limit"},
		{"bad part of All", rdb, pace.All(pace.TokenBucket(pace.PerSecond(1), 1), pace.SlidingCounter(pace.PerSecond(1))), Options{}, "Limit"},
		{"invalid fallback", rdb, pace.TokenBucket(pace.PerSecond(1), 1), Options{Fallback: pace.TokenBucket(pace.PerSecond(1), 0)}, "Fallback.Burst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim, err := New(tt.rdb, tt.l, tt.o)
			require.Error(t, err)
			assert.Nil(t, lim)
			assert.ErrorIs(t, err, pace.ErrInvalidConfig)
			var ce *pace.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.field, ce.Field, "%v", err)
		})
	}
	n, err := rdb.DBSize(context.Background()).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing was written")
}

// manyParts returns n limits of about 100 a second (a pacer queueing up
// to 2 s), of each algorithm in turn.
func manyParts(n int) []pace.Limit {
	ls := make([]pace.Limit, n)
	for i := range ls {
		r := pace.Rate{N: 100 + i, Per: time.Second}
		switch i % 4 {
		case 0:
			ls[i] = pace.TokenBucket(r, 10)
		case 1:
			ls[i] = pace.LeakyBucket(r, pace.LeakyOptions{Queue: 200, Slack: 2})
		case 2:
			ls[i] = pace.FixedWindow(r)
		default:
			ls[i] = pace.SlidingLog(r)
		}
	}
	return ls
}

// TestNegativeMaxWait: Wait refuses a negative maxWait, as pace.Transport
// refuses a negative MaxWait, with a *pace.ConfigError that is no
// throttle (package batch fails the item), and books nothing; a window of
// exactly one microsecond is accepted.
func TestNegativeMaxWait(t *testing.T) {
	_, rdb := startRedis(t)
	lim := newLimiter(t, rdb, pace.FixedWindow(pace.Rate{N: 1, Per: time.Microsecond}), Options{})
	_, err := lim.Wait(context.Background(), "k", -time.Second)
	require.Error(t, err)
	assert.ErrorIs(t, err, pace.ErrInvalidConfig)
	assert.NotErrorIs(t, err, pace.ErrRateLimited, "a caller's bug is no throttle")
	var ce *pace.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "maxWait", ce.Field)
	n, err := rdb.DBSize(context.Background()).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing was booked")
	_, err = lim.Wait(context.Background(), "k", 0) // 0: no bound
	require.NoError(t, err)
}

// TestErrorTextHidesKey: a new-user trial found the key in redislimit's
// error text, whole (a 1 MiB key made a 1 MiB error string). A key is the
// caller's and may be a credential: the text shows "key~" and 12 hex
// digits of its SHA-256, bounded whatever the key; WaitError.Key keeps it.
func TestErrorTextHidesKey(t *testing.T) {
	_, rdb := startRedis(t)
	// The test is about error text, not latency: it gets a generous
	// Timeout, as a busy 2-core CI machine under -race needs.
	lim := newLimiter(t, rdb, pace.TokenBucket(pace.PerMinute(1), 1), Options{Timeout: 10 * time.Second})
	huge := "sk_live_" + strings.Repeat("k", 1<<20)
	for _, key := range []string{"sk_live_SUPERSECRET", huge, "}" + huge} {
		p, err := lim.Wait(context.Background(), key, 0) // the key's one unit
		require.NoError(t, err)
		lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
		_, err = lim.Wait(context.Background(), key, 10*time.Millisecond)
		require.Error(t, err)
		assert.ErrorIs(t, err, pace.ErrWaitTooLong)
		sum := sha256.Sum256([]byte(key))
		assert.Contains(t, err.Error(), "key~"+hex.EncodeToString(sum[:6]))
		assert.NotContains(t, err.Error(), "sk_live_")
		assert.Less(t, len(err.Error()), 200, "%.200s", err)
		var we *pace.WaitError
		require.ErrorAs(t, err, &we)
		assert.Equal(t, key, we.Key, "WaitError.Key holds the key")
	}
}

// TestUnexpectedReply: a "Redis" that answers a script with a reply of
// another shape gets ErrUnexpectedReply (which matches ErrUnavailable,
// failing closed), never a panic.
func TestUnexpectedReply(t *testing.T) {
	bucket, log := pace.TokenBucket(pace.PerSecond(1), 1), pace.SlidingLog(pace.PerSecond(1))
	replies := map[string]struct {
		reply string
		limit pace.Limit
	}{
		"integer":            {":1\r\n", bucket},
		"status":             {"+OK\r\n", bucket},
		"short array":        {"*2\r\n:0\r\n:0\r\n", bucket},
		"string element":     {"*4\r\n$1\r\nx\r\n:0\r\n:0\r\n:0\r\n", bucket},
		"bad status":         {"*4\r\n:9\r\n:0\r\n:0\r\n:0\r\n", bucket},
		"member of a bucket": {"*8\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n$0\r\n\r\n", bucket},
		"missing member":     {"*7\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n", log},
		"member integer":     {"*8\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:5\r\n", log},
		"negative delay":     {"*4\r\n:1\r\n:-5\r\n:0\r\n:0\r\n", bucket},
		"short non-booking":  {"*3\r\n:1\r\n:0\r\n:0\r\n", bucket},
		"short with a log":   {"*3\r\n:0\r\n:0\r\n:0\r\n", log},
		"short string":       {"*3\r\n:0\r\n$1\r\nx\r\n:0\r\n", bucket},
	}
	for name, tt := range replies {
		t.Run(name, func(t *testing.T) {
			addr := fakeRedis(t, tt.reply)
			rdb := newClient(t, addr)
			lim := newLimiter(t, rdb, tt.limit, Options{Timeout: time.Second})
			_, err := lim.Wait(context.Background(), "k", 0)
			assert.ErrorIs(t, err, ErrUnexpectedReply)
			assert.ErrorIs(t, err, ErrUnavailable)
			var we *pace.WaitError
			assert.ErrorAs(t, err, &we)
		})
	}
}

// fakeRedis serves RESP on a loopback port: every EVALSHA or EVAL gets
// reply, SUBSCRIBE its confirmation, anything else (HELLO, CLIENT) an
// error, as an old server would answer them.
func fakeRedis(t *testing.T, reply string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serveFake(c, reply) })
		}
	})
	return ln.Addr().String()
}

func serveFake(c net.Conn, reply string) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		var out string
		switch strings.ToUpper(args[0]) {
		case "EVALSHA", "EVAL":
			out = reply
		case "SUBSCRIBE":
			out = fmt.Sprintf("*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(args[1]), args[1])
		case "PING":
			out = "+PONG\r\n"
		default:
			out = "-ERR unknown command\r\n"
		}
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := io.WriteString(c, out); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("bad array: %q", line)
	}
	args := make([]string, n)
	for i := range args {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil || size < 0 {
			return nil, fmt.Errorf("bad bulk: %q", line)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

// TestWaitNilContext: Wait refuses a nil Context in both modes, as it
// refuses a negative maxWait: a *pace.ConfigError in a *pace.WaitError,
// no panic, nothing booked.
func TestWaitNilContext(t *testing.T) {
	_, rdb := startRedis(t)
	for name, o := range map[string]Options{"per decision": {Prefix: "nilctx:"}, "leased": {Prefix: "nilctxl:", Lease: time.Second}} {
		t.Run(name, func(t *testing.T) {
			lim := newLimiter(t, rdb, pace.TokenBucket(pace.PerSecond(10), 1), o)
			var nilCtx context.Context
			var err error
			require.NotPanics(t, func() { _, err = lim.Wait(nilCtx, "k", 0) })
			var ce *pace.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "ctx", ce.Field)
			assert.NotErrorIs(t, err, pace.ErrRateLimited)
			_, err = lim.Wait(waitCtx(t, 5*time.Second), "k", 0)
			assert.NoError(t, err, "the one unit is still there")
		})
	}
}

// TestDepartInTheFuture: a Depart told of an instant still to come (a
// caller's bug) counts as now in both modes, so it cannot hold a key
// closed for the fleet, or for the process, until that instant.
func TestDepartInTheFuture(t *testing.T) {
	_, rdb := startRedis(t)
	for name, o := range map[string]Options{"per decision": {Prefix: "future:"}, "leased": {Prefix: "futurel:", Lease: time.Second}} {
		t.Run(name, func(t *testing.T) {
			l := pace.TokenBucket(pace.PerSecond(10), 1)
			lim, other := newLimiter(t, rdb, l, o), newLimiter(t, rdb, l, o)
			ctx := waitCtx(t, 10*time.Second)
			p, err := lim.Wait(ctx, "k", 0)
			require.NoError(t, err)
			lim.Depart(p, time.Now().Add(time.Hour))
			lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
			for _, l := range []*Limiter{lim, other} {
				short, cancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := l.Wait(short, "k", 0)
				cancel()
				assert.NoError(t, err, "the key opens again within its interval, not an hour later")
			}
		})
	}
}

// TestWaitAfterClose: in both modes a Wait after Close fails at once with
// ErrClosed, which is no throttle, so package batch fails the items
// instead of putting them back in line until the run's deadline.
func TestWaitAfterClose(t *testing.T) {
	_, rdb := startRedis(t)
	for name, o := range map[string]Options{"per decision": {Prefix: "closed:"}, "leased": {Prefix: "closedl:", Lease: time.Second}} {
		t.Run(name, func(t *testing.T) {
			lim, err := New(rdb, pace.TokenBucket(pace.PerSecond(100), 10), o)
			require.NoError(t, err)
			require.NoError(t, lim.Close())
			_, err = lim.Wait(waitCtx(t, 5*time.Second), "k", 0)
			require.ErrorIs(t, err, ErrClosed)
			assert.NotErrorIs(t, err, pace.ErrRateLimited)

			api := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer api.Close()
			c := &http.Client{Transport: &pace.Transport{Limiter: lim}}
			start := time.Now()
			rep, err := batch.Run(waitCtx(t, 20*time.Second), []string{api.URL, api.URL, api.URL}, batch.HTTP(c, func(ctx context.Context, u string) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			}, nil), batch.Options{})
			require.ErrorIs(t, err, ErrClosed, "the run says why")
			assert.Equal(t, 3, rep.Summary.Failed, "each item failed, none put back in line")
			assert.Less(t, time.Since(start), 10*time.Second, "the run ended on its own, not at its deadline")
		})
	}
}
