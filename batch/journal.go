package batch

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/pacehttp/pace/internal/redact"
)

// The journal format. Version 1, the format before versions, is a file of
// finish records only (one JSON object per line: id, outcome "succeeded" or
// "failed", status, attempts, duration_ns, error). Version 2 is a
// write-ahead journal: a header line
//
//	{"journal":"pace/batch","version":2,"run":"<run ID>"}
//
// and, besides the finish records of version 1, these records:
//
//	{"id":"<ID>","outcome":"started"}                                  Run, before calling the item function the first time
//	{"id":"<ID>","outcome":"sending","method":"POST","key":"<key>"}    [HTTP], before sending the item's request (key: its idempotency key, if any)
//	{"id":"<ID>","outcome":"not sent"}                                 Run, after an attempt that was shown not to be applied (throttled, or a configuration error); [HTTP], when called for an item whose start Run recorded
//
// A start or sending record without a finish or "not sent" record after
// it marks an item in doubt (see [InDoubt]). Version 3 adds the job's name
// to the header ("job", omitted when empty) and the item's fingerprint to
// the start, sending and finish records ("fp", see fingerprint). Run
// writes version 3 and resumes only version 3: the versions before it
// record no job, so another job's journal cannot be told from this one's.
const (
	journalFormat  = "pace/batch"
	journalVersion = 3
	// maxJournalSize bounds the journal Run reads, in bytes.
	maxJournalSize = 1 << 30
	// maxJobName bounds Options.Job, in bytes.
	maxJobName = 256
)

// Outcomes of the records a version 2 journal adds.
const (
	recStarted = "started"
	recSending = "sending"
	recUnsent  = "not sent"
)

// record is one line of the journal about an item: its start, the request
// it is about to send, or its end.
type record struct {
	ID       string `json:"id"`
	Outcome  string `json:"outcome"` // "succeeded", "failed", "started", "sending" or "not sent"
	Status   int    `json:"status,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	Duration int64  `json:"duration_ns,omitempty"`
	Error    string `json:"error,omitempty"`
	Method   string `json:"method,omitempty"` // on "sending"
	Key      string `json:"key,omitempty"`    // on "sending": the idempotency key sent, if any
	FP       string `json:"fp,omitempty"`     // the item's fingerprint (version 3)
}

// header is the first line of a journal of version 2 or later.
type header struct {
	Journal string `json:"journal"` // journalFormat
	Version int    `json:"version"`
	Run     string `json:"run"`           // the run ID, see [IdempotencyKey]
	Job     string `json:"job,omitempty"` // Options.Job (version 3)
}

func newRecord(r *Result, fp string, hidePath bool) record {
	rec := record{ID: r.ID, Outcome: r.Outcome.String(), Status: r.Status, Attempts: r.Attempts, Duration: int64(r.Duration), FP: fp}
	if r.Err != nil {
		rec.Error = redact.ErrorText(r.Err, hidePath) // no URL's query or user information on disk, nor its path with Options.HidePath
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

// finished reports whether rec records an item's end.
func (rec record) finished() bool {
	return rec.Outcome == Succeeded.String() || rec.Outcome == Failed.String()
}

// valid reports whether rec is a record Run writes: a known outcome, a
// status of 0 or 100 to 999, and no negative count or duration.
func (rec record) valid() bool {
	switch {
	case rec.Status != 0 && (rec.Status < 100 || rec.Status > 999), rec.Attempts < 0, rec.Duration < 0:
		return false
	}
	return rec.finished() || rec.Outcome == recStarted || rec.Outcome == recSending || rec.Outcome == recUnsent
}

// Journal syncing: after this many pending records, or this long after the
// first of them.
const (
	syncEvery = 64
	syncAfter = time.Second
)

// journal appends records to a file. Run's goroutine writes finish records
// and syncs; the goroutines of attempts write start and sending records;
// mu orders them.
type journal struct {
	mu      sync.Mutex
	f       *os.File
	pending int       // records written since the last sync
	syncDue time.Time // when pending records must be synced
	// newDue receives a value when a record becomes pending while none
	// was, so that Run's loop, which may be waiting for something else,
	// sets its alarm for syncDue. Capacity 1; sends never block.
	newDue chan struct{}
}

// journalState is what a journal holds: the run ID and each item's state,
// by ID.
type journalState struct {
	version int // 1 without a header
	run     string
	job     string
	items   map[string]*itemState
}

// itemState is an item's state in the journal: finished, or in doubt.
type itemState struct {
	done    *record // the finish record; nil when the item was started again after it, or never finished
	inDoubt bool    // started and not finished
	sending *record // the last sending record since the item's start, or nil
	fp      string  // the item's fingerprint in its last record that has one
}

// JournalError reports a journal ([Options].Journal) that cannot be opened,
// locked, read or written, or is refused. [Run] returns it before anything
// runs in these cases:
//
//   - the journal cannot be opened, locked or read. Err is
//     [ErrJournalLocked] when another run holds it.
//   - it is refused: another job's (Err is a [*JobError]), no regular file,
//     or over 1 GiB.
//
// Run reports it in [Error].Stop when a write fails during the run. The run
// then stops dispatch. The attempt whose start could not be recorded is not
// made. A whole line that is not a valid record is corrupt, wherever it is.
// Only an unterminated last line is a torn write. It is dropped, so that
// its item runs again. If it was an item's start, the item is then not in
// doubt: nothing was done before its start was written.
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
// record. Each record is written with its newline in one write. So a line
// that has its newline was written whole. If it is not a record, the file
// is not a journal Run can trust.
var errCorrupt = errors.New("not a valid journal record")

// ErrOtherJob is matched by the error [Run] returns, before doing any
// item, for a journal that is not this job's: see [JobError].
var ErrOtherJob = errors.New("batch: another job's journal")

// JobError reports a journal ([Options.Journal]) that is not this job's.
// It names another job ([Options.Job]). Or it holds another item under one
// of this run's item IDs: one of another fingerprint, see Options.Job. Or
// its format version records no job. [Run] returns it inside a
// [*JournalError] before doing any item, and leaves the file as it is. It
// matches [ErrOtherJob].
type JobError struct {
	Journal string // the job the journal names
	Job     string // this run's Options.Job
	ID      string // the item whose fingerprints differ, or ""
	// JournalFP and FP are item ID's fingerprints: the journal's and
	// this run's.
	JournalFP, FP string
	Version       int // the journal's version when it records no job (1 or 2), or 0
}

// Error names both jobs, and both fingerprints of item ID when set.
func (e *JobError) Error() string {
	switch {
	case e.Version != 0:
		return fmt.Sprintf("another job's, maybe: version %d records no job (remove the file to start afresh)", e.Version)
	case e.ID != "":
		return fmt.Sprintf("another job's: its item %q has fingerprint %s, this run's %s (journal job %q, this job %q)",
			e.ID, e.JournalFP, e.FP, e.Journal, e.Job)
	}
	return fmt.Sprintf("another job's: job %q, not this job %q", e.Journal, e.Job)
}

// Unwrap returns ErrOtherJob.
func (e *JobError) Unwrap() error { return ErrOtherJob }

// errNotRegular is the Err of a JournalError for a path that is not a
// regular file (a FIFO, a device, a directory).
var errNotRegular = errors.New("not a regular file")

// errTooLarge is the Err of a JournalError for a journal of more than
// maxJournalSize bytes.
var errTooLarge = fmt.Errorf("larger than %d bytes", maxJournalSize)

// errNewerJournal is the Err of a JournalError for a header of a version
// this package does not know.
var errNewerJournal = fmt.Errorf("journal format newer than version %d", journalVersion)

// openJournal opens or creates the journal of job at path, locks it (see
// lockJournal), and returns it with what it holds. Before reading it, it
// refuses a path that is not a regular file, and a file of more than
// maxJournalSize bytes. Before changing it, it refuses another job's
// journal. That error is a *JobError, found by the header, or by items,
// which returns the *JobError of an item that is not this job's. A torn
// tail (a last line without its newline) is cut off. So new records start
// on a line of their own. A new journal gets a header, with a new run ID.
// readLocked locks the opened journal f and reads it whole: a regular
// file, whatever its path names now, of at most maxJournalSize bytes.
func readLocked(f *os.File) ([]byte, error) {
	switch fi, err := f.Stat(); {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, errNotRegular
	case fi.Size() > maxJournalSize:
		return nil, errTooLarge
	}
	if err := lockJournal(f); err != nil { // before reading: another run may be writing
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxJournalSize+1)) // it may have grown since
	if err != nil {
		return nil, err
	}
	if len(data) > maxJournalSize {
		return nil, errTooLarge
	}
	return data, nil
}

// belongsTo returns a *JobError when the journal read into st is not job's:
// another job's, or of a version that records no job.
func (st *journalState) belongsTo(job string) error {
	switch {
	case st.run == "" && len(st.items) > 0:
		return &JobError{Job: job, Version: 1}
	case st.run != "" && st.version < journalVersion:
		return &JobError{Job: job, Version: st.version}
	case st.run != "" && st.job != job:
		return &JobError{Journal: st.job, Job: job}
	}
	return nil
}

func openJournal(path, job string, items func(*journalState) error) (*journal, *journalState, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, &JournalError{Path: path, Err: errNotRegular} // not opened: a FIFO's open may block
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, &JournalError{Path: path, Err: err}
	}
	fail := func(err error) (*journal, *journalState, error) {
		f.Close()
		var je *JournalError
		if !errors.As(err, &je) {
			err = &JournalError{Path: path, Err: err}
		} else {
			je.Path = path
		}
		return nil, nil, err
	}
	data, err := readLocked(f)
	if err != nil {
		return fail(err)
	}
	st, end, err := parseJournal(data)
	if err != nil {
		return fail(err)
	}
	if err := st.belongsTo(job); err != nil {
		return fail(err)
	}
	if err := items(st); err != nil {
		return fail(err)
	}
	if end < len(data) {
		if err := f.Truncate(int64(end)); err != nil {
			return fail(err)
		}
	}
	j := &journal{f: f, newDue: make(chan struct{}, 1)}
	if st.run == "" {
		st.run, st.version, st.job = newRunID(), journalVersion, job
		b, _ := json.Marshal(header{Journal: journalFormat, Version: journalVersion, Run: st.run, Job: job})
		if _, err := f.Write(append(b, '\n')); err != nil {
			return fail(err)
		}
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	return j, st, nil
}

// fingerprint returns an item's fingerprint: 16 hex digits of SHA-256
// over its JSON encoding (encoding/json), or "" when it has none.
func fingerprint(item any) string {
	h := sha256.New()
	if json.NewEncoder(h).Encode(item) != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// newRunID returns 16 random hex digits (64 bits from crypto/rand).
func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}

// parseJournal returns what data holds and the length of its good prefix.
// That is all of data but a last line without its newline, which is a torn
// write. Any other line that is neither a valid record nor a header of a
// known version is a *JournalError (without Path) naming it. The first
// header gives the run ID. A record of an ID updates its state. A start or
// sending record makes it in doubt. A "not sent" record undoes that. A
// finish record finishes it.
func parseJournal(data []byte) (st *journalState, end int, err error) {
	st = &journalState{version: 1, items: make(map[string]*itemState)}
	for line := 1; end < len(data); line++ {
		n := bytes.IndexByte(data[end:], '\n')
		if n < 0 {
			break // an unterminated last line: torn
		}
		var l struct {
			record
			header
		}
		if json.Unmarshal(data[end:end+n], &l) != nil {
			return nil, 0, &JournalError{Line: line, Err: errCorrupt}
		}
		end += n + 1
		if l.Journal != "" || l.Version != 0 {
			switch {
			case l.Journal != journalFormat || l.Version < 2 || l.Run == "":
				return nil, 0, &JournalError{Line: line, Err: errCorrupt}
			case l.Version > journalVersion:
				return nil, 0, &JournalError{Line: line, Err: errNewerJournal}
			}
			if st.run == "" {
				st.run, st.version, st.job = l.Run, l.Version, l.Job
			}
			continue
		}
		rec := l.record
		if !rec.valid() {
			return nil, 0, &JournalError{Line: line, Err: errCorrupt}
		}
		s := st.items[rec.ID]
		if s == nil {
			s = new(itemState)
			st.items[rec.ID] = s
		}
		fp := s.fp
		if rec.FP != "" {
			fp = rec.FP
		}
		switch rec.Outcome {
		case recStarted:
			*s = itemState{inDoubt: true}
		case recSending:
			*s = itemState{inDoubt: true, sending: &rec}
		case recUnsent:
			*s = itemState{}
		default:
			*s = itemState{done: &rec}
		}
		s.fp = fp
	}
	return st, end, nil
}

// write appends rec as one line, in one write, and syncs when syncEvery
// records are pending. It is safe for concurrent use.
func (j *journal) write(rec record, now time.Time) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return err
	}
	if j.pending++; j.pending == 1 {
		j.syncDue = now.Add(syncAfter)
		select {
		case j.newDue <- struct{}{}:
		default:
		}
	}
	if j.pending >= syncEvery {
		return j.syncLocked()
	}
	return nil
}

// due returns when pending records must be synced, or the zero Time.
func (j *journal) due() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.pending == 0 {
		return time.Time{}
	}
	return j.syncDue
}

// tick syncs if pending records are due at now.
func (j *journal) tick(now time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.pending > 0 && !now.Before(j.syncDue) {
		return j.syncLocked()
	}
	return nil
}

func (j *journal) syncLocked() error {
	j.pending = 0
	return j.f.Sync()
}

// close syncs and closes the file.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.f.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}
