package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// record is one line of the journal: a finished item.
type record struct {
	ID       string `json:"id"`
	Outcome  string `json:"outcome"` // "succeeded" or "failed"
	Status   int    `json:"status,omitempty"`
	Attempts int    `json:"attempts"`
	Duration int64  `json:"duration_ns"`
	Error    string `json:"error,omitempty"`
}

func newRecord(r *Result) record {
	rec := record{ID: r.ID, Outcome: r.Outcome.String(), Status: r.Status, Attempts: r.Attempts, Duration: int64(r.Duration)}
	if r.Err != nil {
		rec.Error = r.Err.Error()
	}
	return rec
}

// result restores the Result of item i from rec.
func (rec record) result(i int) Result {
	r := Result{Index: i, ID: rec.ID, Status: rec.Status, Attempts: rec.Attempts,
		Duration: time.Duration(rec.Duration), Resumed: true, Outcome: Succeeded}
	if rec.Outcome == Failed.String() {
		r.Outcome = Failed
		r.Err = errors.New(rec.Error)
	}
	return r
}

func (rec record) valid() bool {
	return rec.Outcome == Succeeded.String() || rec.Outcome == Failed.String()
}

// Journal syncing: after this many pending records, or this long after the
// first of them.
const (
	syncEvery = 64
	syncAfter = time.Second
)

// journal appends records to a file. It is used by Run's goroutine only.
type journal struct {
	f       *os.File
	pending int       // records written since the last sync
	syncDue time.Time // when pending records must be synced
}

// JournalError reports a journal ([Options].Journal) that cannot be opened,
// locked, read or written. [Run] returns it before anything runs when the
// journal cannot be opened, locked or read (Err is [ErrJournalLocked] when
// another run holds it), and reports it in [Error].Stop when a write fails
// during the run (which then stops dispatch). A whole line that is not a
// valid record is corrupt, wherever it is; only an unterminated last line
// is a torn write, dropped so that its item runs again.
type JournalError struct {
	Path string // the journal's path, Options.Journal
	Line int    // the 1-based line that is not a valid record, or 0
	Err  error  // the underlying error, e.g. from package os
}

// Error returns "batch: journal <Path> line <Line>: <Err>", leaving out the
// line when it is 0.
func (e *JournalError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("batch: journal %s line %d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("batch: journal %s: %v", e.Path, e.Err)
}

// Unwrap returns e.Err.
func (e *JournalError) Unwrap() error { return e.Err }

// ErrJournalLocked is the Err of the [*JournalError] that [Run] returns,
// before doing any item, when another run holds the journal: another
// process, or another Run in this one. See [Options.Journal].
var ErrJournalLocked = errors.New("in use by another run")

// errCorrupt is the Err of a JournalError for a line that is not a valid
// record. Each record is written with its newline in one write, so a line
// that has its newline was written whole: if it is not a record, the file
// is not a journal Run can trust.
var errCorrupt = errors.New("not a valid journal record")

// openJournal opens or creates the journal at path, locks it (see
// lockJournal), and returns it with the records it holds, by ID (a later
// record of an ID replaces an earlier one). A torn tail (a last line
// without its newline) is cut off, so that new records start on a line of
// their own.
func openJournal(path string) (*journal, map[string]record, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, &JournalError{Path: path, Err: err}
	}
	if err := lockJournal(f); err != nil { // before reading: another run may be writing
		f.Close()
		return nil, nil, &JournalError{Path: path, Err: err}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, nil, &JournalError{Path: path, Err: err}
	}
	done, end, err := parseJournal(data)
	if err != nil {
		f.Close()
		var je *JournalError
		if errors.As(err, &je) {
			je.Path = path
		}
		return nil, nil, err
	}
	if end < len(data) {
		if err := f.Truncate(int64(end)); err != nil {
			f.Close()
			return nil, nil, &JournalError{Path: path, Err: err}
		}
	}
	return &journal{f: f}, done, nil
}

// parseJournal returns the records in data and the length of its good
// prefix: all of data but a last line without its newline, which is a torn
// write. Any other line that is not a valid record is a *JournalError
// (without Path) naming it.
func parseJournal(data []byte) (done map[string]record, end int, err error) {
	done = make(map[string]record)
	for line := 1; end < len(data); line++ {
		n := bytes.IndexByte(data[end:], '\n')
		if n < 0 {
			break // an unterminated last line: torn
		}
		var rec record
		if json.Unmarshal(data[end:end+n], &rec) != nil || !rec.valid() {
			return nil, 0, &JournalError{Line: line, Err: errCorrupt}
		}
		done[rec.ID] = rec
		end += n + 1
	}
	return done, end, nil
}

// write appends rec as one line, in one write, and syncs when syncEvery
// records are pending.
func (j *journal) write(rec record, now time.Time) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return err
	}
	if j.pending++; j.pending == 1 {
		j.syncDue = now.Add(syncAfter)
	}
	if j.pending >= syncEvery {
		return j.sync()
	}
	return nil
}

// due returns when pending records must be synced, or the zero Time.
func (j *journal) due() time.Time {
	if j.pending == 0 {
		return time.Time{}
	}
	return j.syncDue
}

// tick syncs if pending records are due at now.
func (j *journal) tick(now time.Time) error {
	if j.pending > 0 && !now.Before(j.syncDue) {
		return j.sync()
	}
	return nil
}

func (j *journal) sync() error {
	j.pending = 0
	return j.f.Sync()
}

// close syncs and closes the file.
func (j *journal) close() error {
	err := j.f.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}
