package batch

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestRunNilFunc: a nil item function is a *pace.ConfigError before
// anything runs (no journal is created), not a crash in Run's goroutine.
func TestRunNilFunc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	rep, err := Run(context.Background(), ints(3), nil, Options{Journal: path})
	var ce *pace.ConfigError
	if !errors.As(err, &ce) || ce.Field != "fn" || !errors.Is(err, pace.ErrInvalidConfig) || rep != nil {
		t.Errorf("Run(nil fn) = %v, %v; want nil and a *pace.ConfigError for fn", rep, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal created for a run that could not start: %v", err)
	}
}

// TestRunNilContext: a nil ctx is a *pace.ConfigError before anything
// runs, not a nil dereference in Run's loop (a new user's trial), as
// redislimit refuses one.
func TestRunNilContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	var nilCtx context.Context // a nil ctx on purpose
	rep, err := Run(nilCtx, ints(3), func(context.Context, int) error { return nil }, Options{Journal: path})
	var ce *pace.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "ctx", ce.Field)
	assert.ErrorIs(t, err, pace.ErrInvalidConfig)
	assert.Nil(t, rep)
	_, serr := os.Stat(path)
	assert.ErrorIs(t, serr, os.ErrNotExist, "no journal for a run that could not start")
}

// TestHTTPNilArguments: HTTP with a nil client uses http.DefaultClient,
// and with a nil build returns nil, which Run refuses before anything runs
// (a user trial saw a nil build stop the run only once items had started).
func TestHTTPNilArguments(t *testing.T) {
	fn := HTTP[string](nil, nil, nil)
	require.Nil(t, fn, "HTTP with a nil build")
	path := filepath.Join(t.TempDir(), "run.jsonl")
	rep, err := Run(context.Background(), []string{"a", "b", "c", "d"}, fn, Options{Concurrency: 1, Journal: path})
	var ce *pace.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "fn", ce.Field)
	assert.Nil(t, rep)
	_, serr := os.Stat(path)
	assert.ErrorIs(t, serr, os.ErrNotExist, "no journal for a run that could not start")

	// A nil client is http.DefaultClient, whose Transport is
	// http.DefaultTransport: swap that for a fake to see the request go.
	sent := 0
	saved := http.DefaultTransport
	http.DefaultTransport = testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		sent++
		return testhttp.Response(http.StatusNoContent), nil
	})
	defer func() { http.DefaultTransport = saved }()
	build := func(ctx context.Context, s string) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/"+s, nil)
	}
	if err := HTTP(nil, build, nil)(context.Background(), "x"); err != nil || sent != 1 {
		t.Errorf("HTTP(nil client) = %v after %d requests, want nil after 1 through http.DefaultClient", err, sent)
	}
}

// TestRunConfigErrorFromTransport: every attempt through a misconfigured
// pace.Transport fails with an error matching pace.ErrInvalidConfig. That
// is the setup's fault, not the items': Run stops at once and journals
// nothing, instead of failing and journaling every item.
func TestRunConfigErrorFromTransport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	client := &http.Client{Transport: &pace.Transport{Retry: retry.Policy{MaxAttempts: -1}}}
	build := func(ctx context.Context, i int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
	}
	rep, err := Run(context.Background(), ints(20), HTTP(client, build, nil), Options{Concurrency: 4, Journal: path})
	if s := rep.Summary; s.Failed != 0 || s.Succeeded != 0 || s.Interrupted+s.NotStarted != 20 {
		t.Errorf("Summary = %v, want nothing failed or succeeded", s)
	}
	if !errors.Is(err, pace.ErrInvalidConfig) {
		t.Errorf("Run error = %v, want one matching pace.ErrInvalidConfig", err)
	}
	assertNothingJournaled(t, path)
}
