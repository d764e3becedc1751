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

// TestMain runs the test binary as a fleet worker when the parent (the
// test below, through os.Executable) starts it with -worker.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-worker" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// TestFleet runs the example with 100 items at 50/s: four worker processes
// share the limit in Redis, and the API serves every item exactly once.
func TestFleet(t *testing.T) { testFleet(t) }

// TestFleetLeased runs it with -lease 1s: each worker decides on its
// share of the limit, and the API still serves every item exactly once,
// no faster than its limit.
func TestFleetLeased(t *testing.T) { testFleet(t, "-lease", "1s") }

func testFleet(t *testing.T, args ...string) {
	if !haveRedis() {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: redis-server not installed")
		}
		t.Skip("redis-server not installed (apt-get install redis-server)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, err := parseArgs(append([]string{"-n", "100"}, args...))
	require.NoError(t, err)
	var stderr bytes.Buffer
	s, err := execute(ctx, cfg, &stderr)
	require.NoError(t, err, stderr.String())
	var out bytes.Buffer
	s.print(&out)
	t.Log("\n" + out.String())
	assert.Empty(t, stderr.String())
	assert.Zero(t, s.workerErr)
	assert.Len(t, s.workers, 4)
	assert.Equal(t, 100, s.once, "items served exactly once")
	assert.Zero(t, s.more, "items served twice")
	assert.Zero(t, s.never, "items never served")
	// Together the workers keep to the API's limit: alone, each would
	// allow all 50 a second, and 100 items would take no time at all.
	assert.GreaterOrEqual(t, s.span, s.ideal()-50*time.Millisecond, "faster than the API's limit allows")
	t.Logf("429s sent by the API: %d", s.refused)
}

// TestFlags: bad flags are refused with one line.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-n", "0"}, {"-rate", "0"}, {"-workers", "0"}, {"-margin", "-1ms"}, {"-lease", "1ms"}, {"-lease", "2m"}, {"-redis", "garbage"}, {"-redis", "localhost:99999"}, {"-redis", "127.0.0.1:1"}, {"-worker"}, {"x"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &stdout, &stderr), "%v", args)
		assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "%v: %q", args, stderr.String())
	}
	var stdout bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, &stdout, &bytes.Buffer{}))
	assert.Contains(t, stdout.String(), "-redis")
	assert.NotContains(t, stdout.String(), "-prefix", "worker flags are not for users")
}

// TestNoRedisServer: without redis-server the parent says how to install it.
func TestNoRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	dirs := redisserver.SbinDirs
	redisserver.SbinDirs = nil
	t.Cleanup(func() { redisserver.SbinDirs = dirs })
	require.False(t, haveRedis(), "a machine without redis-server is staged")
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, run(context.Background(), []string{"-n", "1"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "apt-get install redis-server")
	assert.Equal(t, 1, strings.Count(stderr.String(), "\n"))
}

func haveRedis() bool {
	_, err := redisserver.Find()
	return err == nil
}
