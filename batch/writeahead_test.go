package batch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
)

// TestJournalOlderVersion: a journal of a version before 3 records no
// job, so it may be another job's: Run refuses it with a *JobError naming
// its version, runs nothing and leaves the file as it is. Version 1 is
// testdata/journal-v1.jsonl (finish records only, as earlier code wrote).
func TestJournalOlderVersion(t *testing.T) {
	v1, err := os.ReadFile(filepath.Join("testdata", "journal-v1.jsonl"))
	require.NoError(t, err)
	for version, content := range map[int]string{
		1: string(v1),
		2: `{"journal":"pace/batch","version":2,"run":"00000000000000aa"}` + "\n" + journalLines("a"),
	} {
		path := filepath.Join(t.TempDir(), "run.jsonl")
		writeFile(t, path, content)
		var calls atomic.Int32
		rep, err := Run(context.Background(), []string{"a", "b"}, func(context.Context, string) error { calls.Add(1); return nil },
			Options{Journal: path, ID: func(i int) string { return []string{"a", "b"}[i] }})
		var je *JobError
		require.ErrorAs(t, err, &je, "version %d", version)
		assert.ErrorIs(t, err, ErrOtherJob)
		assert.Equal(t, version, je.Version)
		assert.Contains(t, err.Error(), fmt.Sprintf("version %d records no job", version))
		assert.Nil(t, rep)
		assert.Zero(t, calls.Load())
		b, _ := os.ReadFile(path)
		assert.Equal(t, content, string(b), "the file is left as it is")
	}
}

func TestJournalNewerVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	writeFile(t, path, `{"journal":"pace/batch","version":4,"run":"0123456789abcdef"}`+"\n")
	_, err := Run(context.Background(), ints(1), func(context.Context, int) error { return nil }, Options{Journal: path})
	var je *JournalError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, 1, je.Line)
	assert.ErrorIs(t, err, errNewerJournal)
}

// TestJournalStartBeforeCall: an item's start is in the file before its
// function is called, and an HTTP item's request (method and key) before
// the request reaches the server.
func TestJournalStartBeforeCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	_, err := Run(context.Background(), ints(20), func(ctx context.Context, i int) error {
		s := journalStateOf(t, path).items[fmt.Sprint(i)]
		if s == nil || !s.inDoubt {
			return fmt.Errorf("item %d called before its start was journaled", i)
		}
		return nil
	}, Options{Journal: path, Concurrency: 4})
	require.NoError(t, err)

	path = filepath.Join(t.TempDir(), "http.jsonl")
	var mu sync.Mutex
	var problems []string
	client := &http.Client{Transport: testhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		id := strings.TrimPrefix(req.URL.Path, "/")
		s := journalStateOf(t, path).items[id]
		if s == nil || s.sending == nil || s.sending.Method != req.Method || s.sending.Key != req.Header.Get("Idempotency-Key") {
			mu.Lock()
			problems = append(problems, fmt.Sprintf("item %s sent before its request was journaled (%+v)", id, s))
			mu.Unlock()
		}
		return testhttp.Response(http.StatusOK), nil
	})}
	build := func(ctx context.Context, i int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://api.test/%d", i), nil)
	}
	_, err = Run(context.Background(), ints(20), HTTP(client, build, nil), Options{Journal: path, Concurrency: 4})
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// inDoubtJournal writes a journal whose items a to f an earlier
// run left in doubt, and returns its path.
func inDoubtJournal(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	writeFile(t, path, `{"journal":"pace/batch","version":3,"run":"00000000000000aa"}
{"id":"get","outcome":"started"}
{"id":"get","outcome":"sending","method":"GET"}
{"id":"keyed","outcome":"sending","method":"POST","key":"order-7"}
{"id":"derived","outcome":"sending","method":"POST","key":"`+derivedKey("00000000000000aa", "derived")+`"}
{"id":"unkeyed","outcome":"sending","method":"POST"}
{"id":"rekeyed","outcome":"sending","method":"POST","key":"random-1"}
{"id":"plain","outcome":"started"}
{"id":"throttled","outcome":"sending","method":"POST"}
{"id":"throttled","outcome":"not sent"}
{"id":"done","outcome":"started"}
{"id":"done","outcome":"succeeded","status":200,"attempts":1}
`)
	return path
}

var inDoubtItems = []string{"get", "keyed", "derived", "unkeyed", "rekeyed", "plain", "throttled", "done"}

// TestInDoubt: on resume, items started and not finished are in doubt. An
// idempotent request, or one with the same idempotency key (given by build,
// or derived from the journal's run), is sent again; a POST without a key,
// one whose key changed, and a plain function's item are not: they end
// InDoubt, counted in the Summary and the error. An item whose attempt was
// shown not applied ("not sent") is not in doubt.
func TestInDoubt(t *testing.T) {
	path := inDoubtJournal(t)
	var mu sync.Mutex
	sent := map[string]string{} // id → key
	client := &http.Client{Transport: testhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		sent[strings.TrimPrefix(req.URL.Path, "/")] = req.Header.Get("Idempotency-Key")
		mu.Unlock()
		return testhttp.Response(http.StatusOK), nil
	})}
	build := func(ctx context.Context, id string) (*http.Request, error) {
		method := http.MethodPost
		if id == "get" {
			method = http.MethodGet
		}
		req, err := http.NewRequestWithContext(ctx, method, "http://api.test/"+id, nil)
		switch id {
		case "keyed":
			req.Header.Set("Idempotency-Key", "order-7")
		case "rekeyed":
			req.Header.Set("Idempotency-Key", "random-2")
		case "unkeyed", "throttled":
			req.Header.Set("Idempotency-Key", "") // opted out
		}
		return req, err
	}
	opts := Options{Journal: path, ID: func(i int) string { return inDoubtItems[i] }}
	rep, err := Run(context.Background(), inDoubtItems, HTTP(client, build, nil), opts)
	want := map[string]Outcome{"get": Succeeded, "keyed": Succeeded, "derived": Succeeded, "unkeyed": InDoubt,
		"rekeyed": InDoubt, "plain": InDoubt, "throttled": Succeeded, "done": Succeeded}
	for _, res := range rep.Results {
		assert.Equal(t, want[res.ID], res.Outcome, "item %s", res.ID)
		if res.Outcome == InDoubt {
			assert.ErrorIs(t, res.Err, ErrInDoubt, "item %s", res.ID)
		}
	}
	assert.Equal(t, map[string]string{"get": "", "keyed": "order-7", "derived": derivedKey("00000000000000aa", "derived"), "throttled": ""}, sent)
	s := rep.Summary
	assert.Equal(t, 3, s.InDoubt)
	assert.Equal(t, 3, s.Redone, "get, keyed, derived; not rekeyed, refused by HTTP")
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 3, e.InDoubt)
	assert.Contains(t, s.String(), "3 in doubt")

	// Still in doubt on the next run; with ResendInDoubt they are sent.
	rep, _ = Run(context.Background(), inDoubtItems, HTTP(client, build, nil), opts)
	assert.Equal(t, 3, rep.Summary.InDoubt)
	opts.ResendInDoubt = true
	rep, err = Run(context.Background(), inDoubtItems, HTTP(client, build, nil), opts)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Summary.Redone)
	assert.Contains(t, sent, "unkeyed")
	assert.Equal(t, "random-2", sent["rekeyed"])
}

// TestInDoubtIdempotentOption: a plain function's items in doubt are done
// again when Options.Idempotent declares them so.
func TestInDoubtIdempotentOption(t *testing.T) {
	path := inDoubtJournal(t)
	var called []string
	var mu sync.Mutex
	fn := func(_ context.Context, id string) error {
		mu.Lock()
		called = append(called, id)
		mu.Unlock()
		return nil
	}
	rep, _ := Run(context.Background(), inDoubtItems, fn, Options{Journal: path,
		ID:         func(i int) string { return inDoubtItems[i] },
		Idempotent: func(i int) bool { return inDoubtItems[i] == "plain" }})
	assert.Contains(t, called, "plain")
	assert.NotContains(t, called, "unkeyed")
	assert.Equal(t, Succeeded, rep.Results[5].Outcome)
}

// TestIdempotencyKeys: batch.HTTP gives a POST or PATCH without a key the
// item's derived key, the same on every attempt and in the resumed run,
// different per item; a key build set, X-Idempotency-Key, a GET and the
// empty-header opt-out are left alone; without a journal the key is still
// derived per Run.
func TestIdempotencyKeys(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]string{}
	var tries atomic.Int32
	client := &http.Client{Transport: testhttp.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		id := strings.TrimPrefix(req.URL.Path, "/")
		got[id] = append(got[id], req.Header.Get("Idempotency-Key")+"|"+req.Header.Get("X-Idempotency-Key"))
		if id == "post" && tries.Add(1) == 1 {
			return testhttp.Response(http.StatusTooManyRequests, "Retry-After", "0"), nil
		}
		return testhttp.Response(http.StatusOK), nil
	})}
	items := []string{"post", "patch", "own", "xkey", "get", "optout"}
	var keys sync.Map
	build := func(ctx context.Context, id string) (*http.Request, error) {
		keys.Store(id, IdempotencyKey(ctx))
		method := map[string]string{"patch": http.MethodPatch, "get": http.MethodGet}[id]
		if method == "" {
			method = http.MethodPost
		}
		req, err := http.NewRequestWithContext(ctx, method, "http://api.test/"+id, nil)
		switch id {
		case "own":
			req.Header.Set("Idempotency-Key", "mine")
		case "xkey":
			req.Header.Set("X-Idempotency-Key", "x")
		case "optout":
			req.Header.Set("Idempotency-Key", "")
		}
		return req, err
	}
	path := filepath.Join(t.TempDir(), "run.jsonl")
	opts := Options{Journal: path, ID: func(i int) string { return items[i] }, Backoff: 1}
	_, err := Run(context.Background(), items, HTTP(client, build, nil), opts)
	require.NoError(t, err)
	run := journalStateOf(t, path).run
	k := func(id string) string { return derivedKey(run, id) }
	assert.Equal(t, []string{k("post") + "|", k("post") + "|"}, got["post"], "the same key on the retry")
	assert.Equal(t, []string{k("patch") + "|"}, got["patch"])
	assert.Equal(t, []string{"mine|"}, got["own"])
	assert.Equal(t, []string{"|x"}, got["xkey"])
	assert.Equal(t, []string{"|"}, got["get"])
	assert.Equal(t, []string{"|"}, got["optout"])
	assert.NotEqual(t, k("post"), k("patch"))
	v, _ := keys.Load("post")
	assert.Equal(t, k("post"), v, "IdempotencyKey(ctx) is the derived key")
	assert.True(t, strings.HasPrefix(k("post"), "pace-"+run+"-"))
	assert.Empty(t, IdempotencyKey(context.Background()))

	// Resumed from the same journal (the run ID is in its header), the
	// same item gets the same key.
	writeFile(t, path, fmt.Sprintf(`{"journal":"pace/batch","version":3,"run":%q}`+"\n", run))
	got = map[string][]string{}
	_, err = Run(context.Background(), items[:1], HTTP(client, build, nil), Options{Journal: path})
	require.NoError(t, err)
	assert.Equal(t, []string{k("0") + "|"}, got["post"], "ID 0: the item's index")

	// Without a journal: a key per Run, still stable across attempts.
	got = map[string][]string{}
	tries.Store(0)
	_, err = Run(context.Background(), items[:1], HTTP(client, build, nil), Options{Backoff: 1})
	require.NoError(t, err)
	require.Len(t, got["post"], 2)
	assert.Equal(t, got["post"][0], got["post"][1])
	assert.NotEqual(t, k("0")+"|", got["post"][0])
}

// TestHTTPNilURL: a request with a nil URL fails its item with nothing
// sent (a user trial saw it reported as "1 attempt" by the Transport).
func TestHTTPNilURL(t *testing.T) {
	var sent atomic.Int32
	client := &http.Client{Transport: &pace.Transport{Base: testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		sent.Add(1)
		return testhttp.Response(http.StatusOK), nil
	})}}
	build := func(ctx context.Context, _ int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		req.URL = nil
		return req, err
	}
	rep, _ := Run(context.Background(), ints(1), HTTP(client, build, nil), Options{})
	assert.Equal(t, Failed, rep.Results[0].Outcome)
	assert.ErrorIs(t, rep.Results[0].Err, errNilURL)
	assert.NotContains(t, rep.Results[0].Err.Error(), "attempt")
	assert.Zero(t, sent.Load())
}

// TestDuplicateIDWithoutJournal: duplicate IDs are refused with a journal
// or without (a user trial found them checked only with one).
func TestDuplicateIDWithoutJournal(t *testing.T) {
	items := []string{"a", "b", "a"}
	_, err := Run(context.Background(), items, func(context.Context, string) error { return nil },
		Options{ID: func(i int) string { return items[i] }})
	var ce *pace.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "ID", ce.Field)
}

// TestJournalSyncsStartsInFlight: a start record written while every
// attempt is still in flight is synced within syncAfter, not when the
// attempt ends (Run's loop, waiting for attempts, is told to set its
// alarm).
func TestJournalSyncsStartsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.jsonl")
		var pendingAfter int
		_, err := Run(t.Context(), ints(1), func(ctx context.Context, _ int) error {
			j := attemptOf(ctx).item.run.journal
			time.Sleep(syncAfter + time.Millisecond)
			j.mu.Lock()
			pendingAfter = j.pending
			j.mu.Unlock()
			time.Sleep(time.Hour)
			return nil
		}, Options{Journal: path})
		require.NoError(t, err)
		assert.Zero(t, pendingAfter, "the start record is synced within syncAfter")
	})
}
