package batch

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
)

// call is an item of TestJournalOtherJob's jobs: one request.
type call struct {
	Name, Method string
}

// TestJournalOtherJob: yesterday's job left its journal at the path
// today's job uses. Today's run refuses it with a *JobError naming both
// jobs (or, for two unnamed jobs, the item and both of its fingerprints),
// sends nothing, restores nothing and leaves the file as it is. A job that
// holds none of yesterday's IDs runs every item.
func TestJournalOtherJob(t *testing.T) {
	var sent atomic.Int32
	client := &http.Client{Transport: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		sent.Add(1)
		return testhttp.Response(http.StatusOK), nil
	})}
	build := func(ctx context.Context, c call) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, c.Method, "http://api.test/"+c.Name, nil)
	}
	calls := func(method string, names ...string) []call {
		var cs []call
		for _, n := range names {
			cs = append(cs, call{n, method})
		}
		return cs
	}
	byName := func(cs []call) func(int) string { return func(i int) string { return cs[i].Name } }
	yesterday := calls(http.MethodPost, "a", "b", "c", "d", "e")
	today := calls(http.MethodGet, "a", "b", "c", "d", "e")

	tests := []struct {
		name         string
		yJob, tJob   string
		y, td        []call
		id           func([]call) func(int) string
		want         JobError
		wantContains []string
	}{
		{name: "named jobs", yJob: "refunds-2026-11-30", tJob: "audit-2026-12-01", y: yesterday, td: yesterday,
			want:         JobError{Journal: "refunds-2026-11-30", Job: "audit-2026-12-01"},
			wantContains: []string{`job "refunds-2026-11-30", not this job "audit-2026-12-01"`}},
		{name: "unnamed, IDs by index", y: yesterday, td: today,
			want:         JobError{ID: "0", JournalFP: fingerprint(yesterday[0]), FP: fingerprint(today[0])},
			wantContains: []string{`item "0"`, fingerprint(yesterday[0]), fingerprint(today[0])}},
		{name: "unnamed, IDs from the items", y: yesterday, td: today, id: byName,
			want:         JobError{ID: "a", JournalFP: fingerprint(yesterday[0]), FP: fingerprint(today[0])},
			wantContains: []string{`item "a"`, fingerprint(yesterday[0]), fingerprint(today[0])}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.jsonl")
			opts := Options{Journal: path, Job: tt.yJob}
			if tt.id != nil {
				opts.ID = tt.id(tt.y)
			}
			_, err := Run(context.Background(), tt.y, HTTP(client, build, nil), opts)
			require.NoError(t, err, "yesterday")
			before, err := os.ReadFile(path)
			require.NoError(t, err)
			before = append(before, `{"id":"torn`...) // a torn tail, which a resume would cut
			require.NoError(t, os.WriteFile(path, before, 0o600))

			sent.Store(0)
			opts = Options{Journal: path, Job: tt.tJob}
			if tt.id != nil {
				opts.ID = tt.id(tt.td)
			}
			rep, err := Run(context.Background(), tt.td, HTTP(client, build, nil), opts)
			var je *JobError
			require.ErrorAs(t, err, &je)
			assert.ErrorIs(t, err, ErrOtherJob)
			tt.want.Job, tt.want.Journal = tt.tJob, tt.yJob
			assert.Equal(t, tt.want, *je)
			for _, s := range tt.wantContains {
				assert.Contains(t, err.Error(), s)
			}
			assert.Contains(t, err.Error(), path)
			assert.Nil(t, rep, "no item skipped, restored or run")
			assert.Zero(t, sent.Load())
			after, _ := os.ReadFile(path)
			assert.Equal(t, string(before), string(after), "the journal is left as it is")
		})
	}

	t.Run("no ID in common", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.jsonl")
		_, err := Run(context.Background(), yesterday, HTTP(client, build, nil), Options{Journal: path, ID: byName(yesterday)})
		require.NoError(t, err)
		sent.Store(0)
		fresh := calls(http.MethodGet, "f", "g")
		rep, err := Run(context.Background(), fresh, HTTP(client, build, nil), Options{Journal: path, ID: byName(fresh)})
		require.NoError(t, err)
		assert.Zero(t, rep.Summary.Resumed)
		assert.Equal(t, int32(2), sent.Load())
	})

	t.Run("same job resumes", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.jsonl")
		_, err := Run(context.Background(), yesterday, HTTP(client, build, nil), Options{Journal: path, Job: "refunds"})
		require.NoError(t, err)
		sent.Store(0)
		more := append(append([]call(nil), yesterday...), call{"f", http.MethodPost})
		rep, err := Run(context.Background(), more, HTTP(client, build, nil), Options{Journal: path, Job: "refunds"})
		require.NoError(t, err)
		assert.Equal(t, 5, rep.Summary.Resumed)
		assert.Equal(t, int32(1), sent.Load(), "only the new item")
	})
}

// TestFingerprint: an item's fingerprint is 16 hex digits that follow its
// JSON encoding; an item without one has none.
func TestFingerprint(t *testing.T) {
	assert.Len(t, fingerprint(call{"a", "GET"}), 16)
	assert.Equal(t, fingerprint(call{"a", "GET"}), fingerprint(call{"a", "GET"}))
	assert.NotEqual(t, fingerprint(call{"a", "GET"}), fingerprint(call{"a", "POST"}))
	assert.NotEqual(t, fingerprint(1), fingerprint(2))
	assert.Empty(t, fingerprint(make(chan int)))
	assert.Empty(t, fingerprint(func() {}))
}

// TestJournalTextNotUTF8: a journal is JSON, which turns bytes that are no
// UTF-8 into U+FFFD. An item ID "id-\xff" would come back as another ID
// and a resumed run would do its item again; a job name would no longer
// match itself. With a journal Run refuses both up front, sending nothing;
// it refuses a job name over 256 bytes too (it would fill every error).
func TestJournalTextNotUTF8(t *testing.T) {
	var sent atomic.Int32
	fn := func(context.Context, int) error { sent.Add(1); return nil }
	for name, o := range map[string]Options{
		"ID":       {ID: func(int) string { return "id-\xff" }},
		"Job":      {Job: "nightly-\xff"},
		"long Job": {Job: string(make([]byte, 257))},
	} {
		t.Run(name, func(t *testing.T) {
			o.Journal = filepath.Join(t.TempDir(), "run.jsonl")
			_, err := Run(t.Context(), []int{1}, fn, o)
			require.ErrorIs(t, err, pace.ErrInvalidConfig)
			var ce *pace.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Contains(t, ce.Field, strings.Fields(name)[len(strings.Fields(name))-1])
			assert.Zero(t, sent.Load(), "nothing ran")
		})
	}
	_, err := Run(t.Context(), []int{1}, fn, Options{ID: func(int) string { return "id-\xff" }})
	assert.NoError(t, err, "without a journal any ID works")
}
