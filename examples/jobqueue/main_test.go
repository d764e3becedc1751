package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pacehttp/pace/examples/internal/redisserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain runs the test binary as a worker when the parent (the test
// below, through os.Executable) starts it with -worker.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-worker" {
		os.Exit(workerMain(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// workerMain is main for a worker started by a test: it stops on SIGTERM.
func workerMain(args []string) int {
	ctx, stop := signalContext()
	defer stop()
	return run(ctx, args, os.Stdout, os.Stderr)
}

// TestJobQueueKill runs the example at a smaller size: 3 worker
// processes, 100 tasks over 4 keys at 5/s, one worker SIGKILLed at 2 s.
// A MaxWait of 1 s sends some tasks back to the queue.
// Every task is charged exactly once, as counted by the APIs, and none
// is archived. The killed worker's tasks come back after asynq's lease.
func TestJobQueueKill(t *testing.T) {
	if _, err := redisserver.Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: redis-server not installed")
		}
		t.Skip("redis-server not installed (apt-get install redis-server)")
	}
	cfg, err := parseArgs([]string{"-n", "100", "-workers", "3", "-kill", "2s", "-maxwait", "1s"})
	require.NoError(t, err)
	var stderr bytes.Buffer
	s, err := execute(context.Background(), cfg, &stderr)
	require.NoError(t, err, stderr.String())
	var out bytes.Buffer
	s.print(&out)
	t.Log("\n" + out.String())
	assert.Empty(t, stderr.String())
	assert.Equal(t, 100, s.once, "tasks charged exactly once")
	assert.Zero(t, s.more, "tasks charged twice")
	assert.Zero(t, s.never, "tasks never charged")
	assert.Zero(t, s.archived, "tasks failed for good")
	assert.Zero(t, s.workerErr)
	assert.Len(t, s.workers, 3, "the new worker and the two others report")
	assert.Positive(t, s.killedAt)
	// A throttle spends no retry (asynqpace.IsFailure): asynq counts a
	// failure only for each task the killed worker held.
	assert.Equal(t, s.recovered, s.failedTotal, "failures counted by asynq")
	assert.LessOrEqual(t, s.recovered, cfg.concurrency, "tasks that spent a retry")
	// Together the workers keep to each key's limit: alone, each would
	// allow 5 a second per key, and 100 tasks would take 1.7 s.
	assert.GreaterOrEqual(t, s.spanLive, s.ideal()-50*time.Millisecond, "faster than the APIs' limits allow")
	assert.True(t, s.ok())
}

// TestFlags: bad flags are refused with one line.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-n", "0"}, {"-rate", "0"}, {"-keys", "0"}, {"-workers", "0"}, {"-kill", "-1s"}, {"-maxwait", "0"}, {"-redis", "garbage"}, {"-redis", "localhost:99999"}, {"-redis", "127.0.0.1:1"}, {"-redis", ":0"}, {"-worker"}, {"x"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &stdout, &stderr), "%v", args)
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "%v: %q", args, stderr.String())
	}
	var stdout bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, &stdout, &bytes.Buffer{}))
	assert.Contains(t, stdout.String(), "-kill")
	assert.NotContains(t, stdout.String(), "-prefix", "worker flags are not for users")
}
