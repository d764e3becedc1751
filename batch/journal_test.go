package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
)

// readJournal parses every line of the journal at path, failing the test on
// a line that is neither a valid record nor a header, and returns its
// finish records.
func readJournal(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []record
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var l struct {
			record
			header
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("journal line %d %q: %v", n, sc.Text(), err)
		}
		if l.Journal != "" {
			continue
		}
		if !l.valid() {
			t.Fatalf("journal line %d %q: not a valid record", n, sc.Text())
		}
		if l.finished() {
			recs = append(recs, l.record)
		}
	}
	return recs
}

// deterministic is an item function whose every result depends on the item
// alone: item i takes 10ms + i%7 ms, and items with i%13 == 5 fail with 422.
// It ignores ctx, so a call in flight when the run is cancelled finishes.
func deterministic(calls []atomic.Int32) func(context.Context, int) error {
	return func(ctx context.Context, i int) error {
		calls[i].Add(1)
		time.Sleep(10*time.Millisecond + time.Duration(i%7)*time.Millisecond)
		if i%13 == 5 {
			RecordStatus(ctx, 422)
			return fmt.Errorf("item %d refused", i)
		}
		RecordStatus(ctx, 200)
		return nil
	}
}

// TestJournalResume cancels a 1,000-item run half-way and runs it again
// with the same journal: every item is called exactly once across both
// runs, and the final results equal those of a clean run.
func TestJournalResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		path := filepath.Join(t.TempDir(), "run.jsonl")
		calls := make([]atomic.Int32, n)
		fn := deterministic(calls)

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var atCancel []record
		first, err := Run(ctx, ints(n), fn, Options{Journal: path, OnProgress: func(p Progress) {
			if p.Succeeded+p.Failed == n/2 {
				// Every finished item is in the file already, synced or
				// not: a process killed now would lose none.
				atCancel = readJournal(t, path)
				cancel()
			}
		}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("first run: %v, want context.Canceled", err)
		}
		if len(atCancel) != n/2 {
			t.Errorf("journal held %d records at the cancel, want %d", len(atCancel), n/2)
		}
		done1 := first.Summary.Succeeded + first.Summary.Failed
		if done1 < n/2 || done1 == n || first.Summary.Interrupted != 0 {
			t.Fatalf("first run summary %v, want about half done and nothing interrupted", first.Summary)
		}

		second, err := Run(t.Context(), ints(n), fn, Options{Journal: path})
		var e *Error
		if !errors.As(err, &e) || e.Stop != nil || e.Failed != (n+7)/13 {
			t.Fatalf("second run: %v, want only the %d failed items", err, (n+7)/13)
		}
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Errorf("item %d called %d times across both runs, want 1", i, c)
			}
		}
		if second.Summary.Resumed != done1 {
			t.Errorf("second run resumed %d items, want %d", second.Summary.Resumed, done1)
		}
		if recs := readJournal(t, path); len(recs) != n {
			t.Errorf("journal holds %d records, want %d", len(recs), n)
		}

		clean, _ := Run(t.Context(), ints(n), deterministic(make([]atomic.Int32, n)), Options{})
		for i := range n {
			got, want := second.Results[i], clean.Results[i]
			if got.Resumed != (i < len(first.Results) && first.Results[i].Outcome != NotStarted) {
				t.Errorf("Results[%d].Resumed = %v", i, got.Resumed)
			}
			if fmt.Sprint(got.Err) != fmt.Sprint(want.Err) {
				t.Errorf("Results[%d].Err = %v, want %v", i, got.Err, want.Err)
			}
			got.Err, want.Err, got.Resumed = nil, nil, false
			if got != want {
				t.Errorf("Results[%d] = %+v, want %+v (clean run)", i, got, want)
			}
		}
		s, c := second.Summary, clean.Summary
		if s.Items != c.Items || s.Succeeded != c.Succeeded || s.Failed != c.Failed || s.NotStarted != 0 {
			t.Errorf("summary %v, want the clean run's %v", s, c)
		}
	})
}

// TestJournalReorderedItems: with an ID taken from the item, a restart may
// get the items in another order and still does each once.
func TestJournalReorderedItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "run.jsonl")
		names := []string{"ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen"}
		calls := map[string]int{}
		fn := func(_ context.Context, s string) error { calls[s]++; return nil }
		byName := func(items []string) func(int) string { return func(i int) string { return items[i] } }

		ctx, cancel := context.WithCancel(t.Context())
		_, err := Run(ctx, names, fn, Options{Concurrency: 1, Journal: path, ID: byName(names),
			OnProgress: func(p Progress) {
				if p.Succeeded == 3 {
					cancel()
				}
			}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("first run: %v", err)
		}
		reversed := slices.Clone(names)
		slices.Reverse(reversed)
		rep, err := Run(t.Context(), reversed, fn, Options{Concurrency: 1, Journal: path, ID: byName(reversed)})
		if err != nil || rep.Summary.Resumed != 3 {
			t.Fatalf("second run: %v, %v; want 3 resumed", rep.Summary, err)
		}
		for _, s := range names {
			if calls[s] != 1 {
				t.Errorf("%s called %d times, want 1", s, calls[s])
			}
		}
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// journalHeader is the header of a journal of the unnamed job.
const journalHeader = `{"journal":"pace/batch","version":3,"run":"00000000000000aa"}` + "\n"

func journalLines(ids ...string) string {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, `{"id":%q,"outcome":"succeeded","status":200,"attempts":1,"duration_ns":5}`+"\n", id)
	}
	return b.String()
}

// TestJournalTornTail: a journal whose end was torn by a crash is read up to
// its last good line; the torn items run again, and the file is whole after.
func TestJournalTornTail(t *testing.T) {
	good := journalHeader + journalLines("0", "1", "2", "3", "4")
	tests := []struct {
		name        string
		content     string
		wantResumed int
	}{
		{"intact", good, 5},
		{"partial last line", good + `{"id":"5","outco`, 5},
		{"zeros", good + "\x00\x00\x00\x00", 5},
		{"empty", "", 0},
		{"only torn", `{"id":"0"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.jsonl")
			writeFile(t, path, tt.content)
			var calls [10]atomic.Int32
			rep, err := Run(context.Background(), ints(10), func(_ context.Context, i int) error {
				calls[i].Add(1)
				return nil
			}, Options{Journal: path})
			if err != nil || rep.Summary.Resumed != tt.wantResumed {
				t.Fatalf("Run = %v, %v; want %d resumed", rep.Summary, err, tt.wantResumed)
			}
			for i := range calls {
				if want := int32(min(1, max(0, i-tt.wantResumed+1))); calls[i].Load() != want {
					t.Errorf("item %d called %d times, want %d", i, calls[i].Load(), want)
				}
			}
			recs := readJournal(t, path)
			ids := map[string]bool{}
			for _, r := range recs {
				ids[r.ID] = true
			}
			if len(recs) != 10 || len(ids) != 10 {
				t.Errorf("journal has %d records for %d items, want 10 for 10", len(recs), len(ids))
			}
		})
	}
}

// TestJournalCorrupt: a line that ends with its newline was written whole,
// so if it is not a valid record the file cannot be trusted, wherever the
// line is, the last one included: Run fails with a *JournalError naming the
// line, runs nothing and leaves the file as it was. (Only an unterminated
// last line is a torn write; see TestJournalTornTail.)
func TestJournalCorrupt(t *testing.T) {
	good := journalLines("0", "1", "2", "3", "4")
	tests := []struct {
		name    string
		content string
		line    int
	}{
		{"bad line between good ones", journalLines("0", "1") + "not json\n" + journalLines("2"), 3},
		{"garbage last line", good + "\x00\x01\x02\xff\n", 6},
		{"bad last line", good + "}{\n", 6},
		{"bad line then partial", good + "}{\n" + `{"id":"6"`, 6},
		{"unknown outcome", good + `{"id":"5","outcome":"maybe"}` + "\n", 6},
		// Values Run never writes (a new user's trial saw them restored).
		{"negative status", good + `{"id":"5","outcome":"succeeded","status":-7}` + "\n", 6},
		{"status past 999", good + `{"id":"5","outcome":"failed","status":1000}` + "\n", 6},
		{"negative attempts", good + `{"id":"5","outcome":"succeeded","attempts":-1}` + "\n", 6},
		{"negative duration", good + `{"id":"5","outcome":"succeeded","duration_ns":-5}` + "\n", 6},
		{"empty line", good + "\n", 6},
		{"zeros with a newline", good + "\x00\x00\n", 6},
		{"first line", "}{\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.jsonl")
			writeFile(t, path, tt.content)
			var calls atomic.Int32
			rep, err := Run(context.Background(), ints(10), func(context.Context, int) error { calls.Add(1); return nil },
				Options{Journal: path})
			var je *JournalError
			if !errors.As(err, &je) || je.Line != tt.line || je.Path != path || !errors.Is(err, errCorrupt) || rep != nil || calls.Load() != 0 {
				t.Fatalf("Run = %v, %v after %d calls; want a *JournalError at line %d and nothing run", rep, err, calls.Load(), tt.line)
			}
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Error("a corrupt journal was changed")
			}
		})
	}
}

func TestJournalOpenError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "run.jsonl")
	rep, err := Run(context.Background(), ints(2), func(context.Context, int) error { return nil }, Options{Journal: path})
	var je *JournalError
	if !errors.As(err, &je) || !errors.Is(err, os.ErrNotExist) || rep != nil {
		t.Errorf("Run = %v, %v; want a *JournalError matching os.ErrNotExist", rep, err)
	}
}

func TestJournalDuplicateID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	items := []string{"a", "b", "a"}
	_, err := Run(context.Background(), items, func(context.Context, string) error { return nil },
		Options{Journal: path, ID: func(i int) string { return items[i] }})
	var ce *pace.ConfigError
	if !errors.As(err, &ce) || ce.Field != "ID" || !strings.Contains(err.Error(), "items 0 and 2") {
		t.Errorf("Run = %v, want a *ConfigError for ID naming items 0 and 2", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal created before the IDs were checked: %v", err)
	}
}

func TestJournalRedoFailed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	writeFile(t, path, journalHeader+journalLines("0")+`{"id":"1","outcome":"failed","status":503,"attempts":2,"duration_ns":7,"error":"boom"}`+"\n")
	var calls [2]atomic.Int32
	fn := func(_ context.Context, i int) error { calls[i].Add(1); return nil }

	rep, err := Run(context.Background(), ints(2), fn, Options{Journal: path})
	want := Result{Index: 1, ID: "1", Outcome: Failed, Status: 503, Attempts: 2, Duration: 7, Resumed: true}
	got := rep.Results[1]
	if got.Err == nil || got.Err.Error() != "boom" {
		t.Errorf("restored Err = %v, want boom", got.Err)
	}
	got.Err = nil
	if got != want || calls[1].Load() != 0 || err == nil {
		t.Errorf("without RedoFailed: %+v, %d calls, err %v; want %+v restored, 0 calls, an error", got, calls[1].Load(), err, want)
	}

	rep, err = Run(context.Background(), ints(2), fn, Options{Journal: path, RedoFailed: true})
	if err != nil || calls[0].Load() != 0 || calls[1].Load() != 1 || rep.Results[1].Resumed {
		t.Errorf("with RedoFailed: err %v, calls %d %d; want item 1 run again", err, calls[0].Load(), calls[1].Load())
	}
	rep, err = Run(context.Background(), ints(2), fn, Options{Journal: path})
	if err != nil || rep.Summary.Succeeded != 2 || rep.Summary.Resumed != 2 {
		t.Errorf("after the redo: %v, %v; want the later record to win", rep.Summary, err)
	}
}

// TestJournalSyncBatches checks the journal's sync schedule on explicit
// times: every syncEvery records, or syncAfter after the first pending one.
func TestJournalSyncBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	j, st, err := openJournal(path, "", func(*journalState) error { return nil })
	if err != nil || len(st.items) != 0 {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range syncEvery - 1 {
		if err := j.write(record{ID: fmt.Sprint(i), Outcome: "succeeded"}, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if j.pending != syncEvery-1 || !j.due().Equal(t0.Add(syncAfter)) {
		t.Errorf("after %d writes: pending %d, due %v", syncEvery-1, j.pending, j.due())
	}
	_ = j.write(record{ID: "last", Outcome: "succeeded"}, t0)
	if j.pending != 0 || !j.due().IsZero() {
		t.Errorf("after %d writes: pending %d, want a sync", syncEvery, j.pending)
	}
	_ = j.write(record{ID: "x", Outcome: "succeeded"}, t0)
	if _ = j.tick(t0.Add(syncAfter - 1)); j.pending != 1 {
		t.Error("synced before syncAfter")
	}
	if _ = j.tick(t0.Add(syncAfter)); j.pending != 0 {
		t.Error("not synced at syncAfter")
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	if recs := readJournal(t, path); len(recs) != syncEvery+1 {
		t.Errorf("journal has %d records, want %d", len(recs), syncEvery+1)
	}
}

// FuzzParseJournal checks parseJournal's contract on any bytes: either an
// error naming a line that exists and ends with a newline, or a good prefix
// made of whole lines, followed by at most one unterminated line.
func FuzzParseJournal(f *testing.F) {
	good := journalLines("0", "1")
	for _, s := range []string{"", good, good + `{"id":"2"`, good + "\x00\x01\x02\xff\n", "\n", "}{\n" + good,
		good + `{"id":"5","outcome":"maybe"}` + "\n",
		`{"journal":"pace/batch","version":3,"run":"00000000000000aa","job":"j"}` + "\n" + `{"id":"0","outcome":"started","fp":"0123456789abcdef"}` + "\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, end, err := parseJournal(data)
		if err != nil {
			var je *JournalError
			lines := bytes.Count(data, []byte("\n"))
			if !errors.As(err, &je) || je.Line < 1 || je.Line > lines || st != nil {
				t.Fatalf("parseJournal(%q) = %v, want a *JournalError naming one of its %d whole lines", data, err, lines)
			}
			return
		}
		if end < 0 || end > len(data) || (end > 0 && data[end-1] != '\n') || bytes.IndexByte(data[end:], '\n') >= 0 {
			t.Fatalf("parseJournal(%q) good prefix %d: not whole lines followed by one torn line", data, end)
		}
		if len(st.items) > bytes.Count(data[:end], []byte("\n")) {
			t.Fatalf("parseJournal(%q) = %d items from %d lines", data, len(st.items), bytes.Count(data[:end], []byte("\n")))
		}
	})
}

// journalStateOf parses the journal at path.
func journalStateOf(t *testing.T, path string) *journalState {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	st, _, err := parseJournal(data)
	require.NoError(t, err)
	return st
}

// assertNothingJournaled checks that the journal at path records no item
// as finished or in doubt: a resumed run does every item afresh.
func assertNothingJournaled(t *testing.T, path string) {
	t.Helper()
	for id, s := range journalStateOf(t, path).items {
		if s.done != nil || s.inDoubt {
			t.Errorf("journal records item %s as %+v; want nothing", id, *s)
		}
	}
}
