package batch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/retryrule"
)

// Run calls fn for each item, once per attempt, with at most
// opts.Concurrency calls in flight. It returns a [Report] that accounts for
// every item in input order.
//
// fn's error decides the item's fate:
//
//   - nil is success.
//   - An error matching [ErrThrottled] pauses the attempt's key, and the
//     item tries again.
//   - An error matching [pace.ErrRateLimited] (a client-side refusal) makes
//     the item try again after the wait the refusal names. It pauses
//     nothing (see [ErrThrottled]).
//   - An error matching [pace.ErrInvalidConfig] (a misconfigured
//     pace.Transport, say) says the setup is wrong, not the item. Run stops
//     dispatch as StopOnError would, and the item is Interrupted. So nothing
//     is journaled as failed, and a run with the setup fixed does it.
//   - Any other error fails the item, unless the context had ended, which
//     makes it Interrupted.
//
// A retryable failure of an item safe to send again goes back in line. It
// is tried later in the run, within a bound (see [Options.MaxRequeues]).
// Any other failure is final: retry transient errors inside fn, or in the
// client's Transport. fn is called with a context derived from ctx, and
// should give up when it ends.
//
// When ctx ends, Run starts nothing more. It waits for the calls in flight
// to return (they see the cancelled context), and returns what was done.
// It never leaves a goroutine behind. A panic in fn is not recovered: it
// runs on a goroutine of Run's own, so it ends the program. Separate Runs
// share no state, so several may proceed at once, each with its own
// journal if any.
//
// With a journal, an item started by an earlier run that ended before the
// item finished is in doubt. Run does it again only when that is safe.
// Otherwise it reports it [InDoubt] without calling fn (see
// [Options.Journal]).
//
// The error is nil when every item succeeded (restored ones included),
// even if ctx ended after the last item started. A journal that could not
// be written still gives an error. When some item did not succeed, or the
// journal failed, the error is an [*Error], returned with the full Report.
// Some setups give a nil Report and an error before anything runs:
//
//   - a nil ctx or fn, invalid options or two items with the same ID give
//     a [*pace.ConfigError] (matching [pace.ErrInvalidConfig]). Its Field
//     names the option, such as "Rate.N", "ctx" or "fn" for a nil one, or
//     "ID" for a duplicate ID.
//   - a journal that cannot be opened, locked or read, or is refused
//     (another job's, see [Options.Job]), gives a [*JournalError].
func Run[T any](ctx context.Context, items []T, fn func(ctx context.Context, item T) error, opts Options) (*Report, error) {
	if ctx == nil {
		return nil, &pace.ConfigError{Field: "ctx", Reason: "must not be nil (use context.Background())"}
	}
	if fn == nil {
		return nil, &pace.ConfigError{Field: "fn", Reason: "the item function must not be nil (HTTP returns nil for a nil build)"}
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	opts.Concurrency = min(opts.Concurrency, max(len(items), 1)) // it sizes done
	r := &runner[T]{
		ctx:     ctx,
		items:   items,
		fn:      fn,
		opts:    opts,
		results: make([]Result, len(items)),
		done:    make(chan *attempt, opts.Concurrency),
		gate:    newGate(),
	}
	if opts.Rate != (pace.Rate{}) {
		if r.ceiling, err = pace.NewShaper(pace.SlidingLog(opts.Rate)); err != nil {
			return nil, err // withDefaults has checked the Rate
		}
	}
	if err := r.prepare(); err != nil {
		return nil, err
	}
	r.run.hidePath = opts.HidePath
	r.loop()
	return r.report()
}

// attempt is one call of fn for one item.
type attempt struct {
	idx     int
	requeue bool // a requeued attempt
	start   time.Time
	state   attemptState // status and gate permit, through the attempt's context
	err     error        // fn's result, set before the attempt is sent on done
	dur     time.Duration
}

// runner is the state of one Run. Only Run's goroutine touches it; the
// goroutines that call fn communicate through done.
type runner[T any] struct {
	ctx     context.Context
	items   []T
	fn      func(context.Context, T) error
	opts    Options
	results []Result
	done    chan *attempt // capacity Concurrency, so callers never block
	journal *journal
	run     run    // shared with the attempts
	marks   []item // each item's place in the journal, by index
	started time.Time

	next            int        // next index never started (restored items are skipped)
	retry           []int      // throttled items waiting for another attempt, oldest first
	later           []requeued // items back in line after a retryable failure, by due time
	requeues        []int      // each item's requeues so far
	waited          []bool     // items held back by their key's pause (see inLine): Running, even with no attempt
	requeueInflight int        // requeued attempts in flight
	inflight        int
	stop            error // why dispatch stopped, or nil while it goes on
	stopped         bool
	lapsed          error // why the first item of a key of its own ran out of time (see outlasted), or nil

	ceiling *pace.Shaper // Options.Rate, or nil
	gate    *gate        // the throttles of the run's keys
	tl      *timeline    // what the run did over time, for Report.WriteHTML

	sum Summary // counters kept as the run goes
}

// prepare fills in IDs, checks them, and restores results from the journal.
func (r *runner[T]) prepare() error {
	r.sum.Items = len(r.items)
	r.marks = make([]item, len(r.items))
	r.requeues = make([]int, len(r.items))
	r.waited = make([]bool, len(r.items))
	if err := r.assignIDs(); err != nil {
		return err
	}
	if r.opts.Journal == "" {
		r.run.id = newRunID()
		r.sum.NotStarted = len(r.items)
		r.sum.Ideal = ideal(r.opts.Rate, len(r.items))
		return nil
	}
	if err := r.journalText(); err != nil {
		return err
	}
	for i := range r.marks {
		r.marks[i].fp = fingerprint(r.items[i])
	}
	j, st, err := openJournal(r.opts.Journal, r.opts.Job, func(st *journalState) error {
		for _, m := range r.marks {
			if s := st.items[m.id]; s != nil && s.fp != "" && m.fp != "" && s.fp != m.fp {
				return &JobError{Journal: st.job, Job: r.opts.Job, ID: m.id, JournalFP: s.fp, FP: m.fp}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.journal = j
	r.run = run{journal: j, path: r.opts.Journal, id: st.run}
	r.restore(st)
	r.sum.NotStarted = len(r.items) - r.sum.Resumed
	r.sum.Ideal = ideal(r.opts.Rate, r.sum.NotStarted)
	return nil
}

// assignIDs gives every item its ID (Options.ID, else its index) and
// refuses two items of one ID.
func (r *runner[T]) assignIDs() error {
	seen := make(map[string]int, len(r.items))
	for i := range r.results {
		id := strconv.Itoa(i)
		if r.opts.ID != nil {
			id = r.opts.ID(i)
		}
		if j, dup := seen[id]; dup {
			return &pace.ConfigError{Field: "ID", Value: id, Reason: fmt.Sprintf("items %d and %d have the same ID", j, i)}
		}
		seen[id] = i
		r.results[i] = Result{Index: i, ID: id}
		r.marks[i] = item{run: &r.run, id: id}
	}
	return nil
}

// restore takes over what the journal's state st says of each item: the
// outcome of one done before (unless RedoFailed redoes a failure), and the
// fate of one in doubt.
func (r *runner[T]) restore(st *journalState) {
	for i := range r.results {
		s := st.items[r.results[i].ID]
		switch {
		case s == nil:
		case s.done != nil:
			if r.opts.RedoFailed && s.done.Outcome == Failed.String() {
				continue
			}
			r.results[i] = s.done.result(i)
			r.sum.Resumed++
			if r.results[i].Outcome == Succeeded {
				r.sum.Succeeded++
			} else {
				r.sum.Failed++
			}
		case s.inDoubt:
			r.resumeInDoubt(i, s)
		}
	}
}

// resumeInDoubt decides the fate of item i, in doubt after an earlier run.
// It is done again when it is declared idempotent or ResendInDoubt is set.
// It is also done again when the earlier run's request was idempotent or
// carried an idempotency key. HTTP then sends the new one only if it is
// the same method or key. Otherwise it is left InDoubt, not called.
func (r *runner[T]) resumeInDoubt(i int, s *itemState) {
	m := &r.marks[i]
	m.started = true // its start record is there
	switch {
	case r.opts.ResendInDoubt || (r.opts.Idempotent != nil && r.opts.Idempotent(i)):
		m.resend = true
	case s.sending != nil && (retryrule.IdempotentMethod(s.sending.Method) || s.sending.Key != ""):
		m.doubt = s.sending
	default:
		r.results[i] = Result{Index: i, ID: r.results[i].ID, Outcome: InDoubt, Err: ErrInDoubt, Resumed: true}
		r.sum.Resumed++
		r.sum.InDoubt++
		return
	}
	r.sum.Redone++
}

// loop dispatches attempts and collects their results until nothing is left
// to do and nothing is in flight.
func (r *runner[T]) loop() {
	r.started = time.Now()
	r.tl = newTimeline(r.started, r.opts.Rate, r.opts.HidePath)
	timer := time.NewTimer(time.Hour) // armed only while a wake is due
	timer.Stop()
	for {
		if !r.stopped && r.ctx.Err() != nil { // no select has seen it yet
			r.halt(context.Cause(r.ctx))
		}
		now := time.Now()
		r.dispatch(now)
		wake := r.requeueWake() // when a requeued item or the journal's sync is due; zero: never
		if r.journal != nil {
			if err := r.journal.tick(now); err != nil {
				r.halt(r.journalErr(err))
			}
			if due := r.journal.due(); !due.IsZero() && (wake.IsZero() || due.Before(wake)) {
				wake = due
			}
		}
		if r.inflight == 0 && (r.stopped || !r.hasWork()) {
			return
		}
		var alarm <-chan time.Time
		if !wake.IsZero() {
			timer.Reset(wake.Sub(now))
			alarm = timer.C
		}
		var ctxDone <-chan struct{}
		if !r.stopped {
			ctxDone = r.ctx.Done()
		}
		var newDue <-chan struct{} // an attempt's record became pending: set the alarm
		if r.journal != nil {
			newDue = r.journal.newDue
		}
		select {
		case a := <-r.done:
			r.finish(a)
		case <-newDue:
		case <-alarm:
		case <-ctxDone:
			r.halt(context.Cause(r.ctx))
		}
		timer.Stop()
	}
}

// hasWork reports whether some item waits to be started or retried.
func (r *runner[T]) hasWork() bool {
	for r.next < len(r.results) && r.results[r.next].Resumed {
		r.next++
	}
	return len(r.retry) > 0 || len(r.later) > 0 || r.next < len(r.results)
}

// dispatch starts attempts at now while there is room among Concurrency:
// throttled items first, then requeued and refused items that are due, then
// new ones.
// Each waits for the ceiling and its key in its own goroutine (see gate).
func (r *runner[T]) dispatch(now time.Time) {
	for !r.stopped && r.inflight < r.opts.Concurrency && r.hasWork() {
		switch q, ok := r.dueRequeue(now); {
		case len(r.retry) > 0:
			if ok { // put it back: the throttled item goes first
				r.putLater(q)
			}
			idx := r.retry[0]
			r.retry = r.retry[1:]
			r.launch(idx, now, false)
		case ok:
			r.launch(q.idx, now, !q.refused)
		case r.next < len(r.results):
			idx := r.next
			r.next++
			r.launch(idx, now, false)
		default:
			return // only requeued items not yet due
		}
	}
}

// launch starts one attempt of item idx at now. The attempt first passes
// the gate under the run's key (see gate), then calls fn.
func (r *runner[T]) launch(idx int, now time.Time, requeue bool) {
	res := &r.results[idx]
	switch {
	case res.Attempts > 0:
		r.sum.Retries++
	case !r.waited[idx]:
		r.sum.NotStarted--
		r.sum.Running++
	}
	res.Attempts++
	r.inflight++
	if requeue {
		r.requeueInflight++
	}
	a := &attempt{idx: idx, requeue: requeue, start: now}
	a.state.gate, a.state.ceiling, a.state.item, a.state.tl = r.gate, r.ceiling, &r.marks[idx], r.tl
	a.state.pauses = retryrule.Pauses{First: r.opts.Backoff, Max: r.opts.MaxBackoff}
	actx := context.WithValue(r.ctx, attemptKey{}, &a.state)
	it := r.items[idx]
	go func() {
		if a.state.permit, a.err = r.gate.pass(actx, "", r.ceiling, false, false); a.err == nil {
			a.start, a.state.passed = time.Now(), true
			if a.err = a.state.item.begin(a.start); a.err == nil {
				a.err = r.fn(actx, it)
			}
		}
		a.dur = time.Since(a.start)
		r.done <- a
	}()
}

// finish settles an attempt that ended.
func (r *runner[T]) finish(a *attempt) {
	now := time.Now()
	r.inflight--
	if a.requeue {
		r.requeueInflight--
	}
	if we, held := r.heldAtGate(a); held {
		r.inLine(a, we, now)
		return
	}
	r.recordSent(a)
	res := r.ended(a)
	delay, kind := throttleOf(a.err, now)
	p := a.state.permit
	switch {
	case a.err == nil:
		r.settle(res, Succeeded, now)
		if r.gate.settle(p, a.start, now, true, 0) {
			r.progressPause() // the probe's answer opened its key
		}
	case kind == serverThrottle:
		r.sum.Throttled++
		if a.state.status.Load() != 0 || statusOf(a.err) != 0 {
			r.record(a, evThrottled, now) // answered: a 429, say
		} else {
			r.record(a, evRefused, now) // the Transport held it for the key's pause: nothing sent
		}
		r.unsent(a.idx, now)
		r.throttled(a, delay, now)
	case kind == clientRefusal:
		r.sum.Throttled++
		r.record(a, evRefused, now)
		r.unsent(a.idx, now)
		r.refused(a, delay, now)
	case errors.Is(a.err, ErrInDoubt): // HTTP refused to send it again
		r.gate.settle(p, a.start, now, false, 0)
		r.sum.Redone-- // counted when it was scheduled to be redone
		r.settle(res, InDoubt, now)
		r.record(a, evInDoubt, now)
	case errors.As(a.err, new(*JournalError)): // its start could not be recorded: nothing was done
		r.gate.settle(p, a.start, now, false, 0)
		r.settle(res, Interrupted, now)
		r.halt(a.err)
	case r.ctx.Err() != nil:
		r.gate.settle(p, a.start, now, false, 0)
		r.settle(res, Interrupted, now)
	case errors.Is(a.err, pace.ErrInvalidConfig): // the setup is wrong, not the item
		r.gate.settle(p, a.start, now, false, 0)
		r.unsent(a.idx, now)
		r.settle(res, Interrupted, now)
		r.halt(&ItemError{Index: res.Index, ID: res.ID, Status: res.Status, Err: res.Err})
	default:
		r.failed(a, res, now)
	}
	if r.sum.Pauses > 0 { // a limit is learned only after a pause
		r.tl.learnedAt(p.Key, r.gate.learnedRate(p.Key), now)
	}
	r.progress(a.idx)
}

// ended adds what attempt a did to its item's Result (its duration, last
// status and error) and returns that Result.
func (r *runner[T]) ended(a *attempt) *Result {
	res := &r.results[a.idx]
	res.Duration += a.dur
	if s := int(a.state.status.Load()); s != 0 {
		res.Status = s
	}
	if s := statusOf(a.err); s != 0 {
		res.Status = s
	}
	res.Err = a.err
	return res
}

// failed handles an attempt that failed with an answer or an error that is
// no throttle. The item goes back in line if it may (requeue), else it
// fails. With StopOnError the run stops.
func (r *runner[T]) failed(a *attempt, res *Result, now time.Time) {
	opened := r.gate.settle(a.state.permit, a.start, now, true, 0)
	if r.requeue(a, now) {
		r.record(a, evRequeued, now)
	} else {
		r.settle(res, Failed, now)
		r.record(a, evFailed, now)
		if r.opts.StopOnError {
			r.halt(&ItemError{Index: res.Index, ID: res.ID, Status: res.Status, Err: res.Err})
		}
	}
	if opened {
		r.progressPause()
	}
}

// settle gives item res its final outcome and journals it.
func (r *runner[T]) settle(res *Result, o Outcome, now time.Time) {
	res.Outcome = o
	r.sum.Running--
	switch o {
	case Succeeded:
		r.sum.Succeeded++
	case Failed:
		r.sum.Failed++
	case Interrupted:
		r.sum.Interrupted++
		return
	case NotStarted: // held back at the gate each time, never sent
		r.sum.NotStarted++
		return
	case InDoubt: // not journaled: it stays in doubt
		r.sum.InDoubt++
		return
	}
	if r.journal != nil && !r.stopJournal() {
		if err := r.journal.write(newRecord(res, r.marks[res.Index].fp, r.run.hidePath), now); err != nil {
			r.halt(r.journalErr(err))
		}
	}
}

// unsent journals that item idx's last attempt was not applied.
func (r *runner[T]) unsent(idx int, now time.Time) {
	if r.stopJournal() {
		return
	}
	if err := r.marks[idx].unsent(now); err != nil {
		r.halt(err)
	}
}

// stopJournal reports whether the journal already failed.
func (r *runner[T]) stopJournal() bool {
	var je *JournalError
	return r.stop != nil && errors.As(r.stop, &je)
}

// journalText refuses a Job or an item ID that a journal cannot hold as it
// is. JSON turns text that is no UTF-8 into U+FFFD, another ID or job. A
// resumed run would then do an item again. Job is bounded too.
func (r *runner[T]) journalText() error {
	if !utf8.ValidString(r.opts.Job) || len(r.opts.Job) > maxJobName {
		return &pace.ConfigError{Field: "Job", Value: r.opts.Job,
			Reason: fmt.Sprintf("must be valid UTF-8 of at most %d bytes, which a journal holds as it is", maxJobName)}
	}
	for i := range r.marks {
		if !utf8.ValidString(r.marks[i].id) {
			return &pace.ConfigError{Field: "ID", Value: r.marks[i].id, Reason: fmt.Sprintf("item %d: an ID in a journal must be valid UTF-8", i)}
		}
	}
	return nil
}

func (r *runner[T]) journalErr(err error) error {
	return &JournalError{Path: r.opts.Journal, Err: err}
}

// throttled handles an attempt that came back throttled. Its key pauses
// (see pauseFor), and the item goes back in line. Its next attempt waits
// at the gate until the key's probe has been answered.
func (r *runner[T]) throttled(a *attempt, delay time.Duration, now time.Time) {
	p := a.state.permit
	pause := r.pauseFor(delay, p.Strikes)
	news := r.gate.settle(p, a.start, now, false, pause)
	if until, paused := r.gate.pauseEnd(p.Key); paused {
		r.tl.pause(p.Key, a.state.host, news, now, until)
	}
	if news {
		r.sum.Pauses++
		r.progressPause()
	}
	r.again(a, pause, false, now)
}

// heldAtGate reports whether a gate held attempt a back before anything
// of it was sent, with the gate's refusal, if any: its key's pause (in
// line, or outlasting the deadline), or the context ending while it
// waited at a gate.
func (r *runner[T]) heldAtGate(a *attempt) (*pace.WaitError, bool) {
	var we *pace.WaitError
	if errors.As(a.err, &we) && (errors.Is(we.Err, errInLine) || errors.Is(we.Err, errWaitExceedsDeadline) ||
		a.state.heldBack && errors.Is(we.Err, pace.ErrWaitExceedsDeadline)) {
		return we, true
	}
	return we, r.ctx.Err() != nil && (!a.state.passed || a.state.heldBack)
}

// inLine puts the item of attempt a back in line, due when its key's pause
// ends, we.Delay after now (see waitInLine). The gate held it back before
// it was sent, so that it waits here and holds no slot. An attempt a gate
// held until the context ended (we may be nil) is counted the same way,
// and ends its item. Nothing was sent,
// and the attempt counts as none: not in Result.Attempts, Summary.Retries
// or Throttled. An item held back before its first attempt stays Running.
// A wait that would outlast the context's deadline ends the item at once
// (see outlasted), and so does the end of dispatch: NotStarted when none
// of its attempts was sent, else Interrupted (see unfinished).
func (r *runner[T]) inLine(a *attempt, we *pace.WaitError, now time.Time) {
	r.gate.settle(a.state.permit, a.start, now, false, 0) // it admits nothing: harmless
	r.unsent(a.idx, now)
	res := &r.results[a.idx]
	if res.Err == nil {
		res.Err = a.err // why it has not gone yet
	}
	if res.Attempts--; res.Attempts > 0 {
		r.sum.Retries--
	}
	r.waited[a.idx] = true // it stays Running
	switch {
	case r.stopped || r.ctx.Err() != nil:
		r.settle(res, r.unfinished(a.idx), now)
	case errors.Is(we.Err, pace.ErrWaitExceedsDeadline): // errWaitExceedsDeadline matches it too
		r.outlasted(a, we.Delay, now)
	default:
		r.putLater(requeued{idx: a.idx, at: now.Add(we.Delay), refused: !a.requeue})
	}
}

// unfinished is the Outcome of item idx when the run ends before it
// finished: NotStarted when none of its attempts was sent (the gate held
// each back), else Interrupted.
func (r *runner[T]) unfinished(idx int) Outcome {
	if r.results[idx].Attempts == 0 {
		return NotStarted
	}
	return Interrupted
}

// refused handles an attempt that a client-side limit refused, nothing
// sent (see throttleOf). The item goes back in line, due when the wait the
// limit named has passed. That is Options.Backoff when it named none, at
// most Options.MaxBackoff. The key's other attempts wait as long at the
// gate. The key is not paused and its learned limit is left as it is. The
// refusal says nothing of the server, and the limit that refused goes on
// pacing the item's next attempt.
func (r *runner[T]) refused(a *attempt, delay time.Duration, now time.Time) {
	if delay <= 0 {
		delay = r.opts.Backoff
	}
	delay = min(delay, r.opts.MaxBackoff)
	r.gate.refused(a.state.permit, now, delay)
	r.again(a, delay, true, now)
}

// again puts the item of attempt a, throttled or refused at now, back in
// line to go again after wait. A throttled one goes at once, to wait for
// its key's pause at the gate. A refused one goes when wait has passed. An
// item whose wait would outlast the context's deadline ends instead (see
// outlasted). So does every item once dispatch has stopped.
func (r *runner[T]) again(a *attempt, wait time.Duration, refused bool, now time.Time) {
	switch {
	case r.stopped:
		r.settle(&r.results[a.idx], r.unfinished(a.idx), now)
	case r.outlasts(wait, now):
		r.outlasted(a, wait, now)
	case refused:
		r.putLater(requeued{idx: a.idx, at: now.Add(wait), refused: true})
	default:
		r.retry = append(r.retry, a.idx)
	}
}

// outlasted ends the item of attempt a, throttled or refused, whose next
// attempt could not start before the context's deadline (it would wait d
// from now). The item is Interrupted, not journaled, so that a resumed run
// does it. Under a key of its own (the key of an [HTTP] request) only the
// item ends, and the other keys go on. The key's other attempts meet the
// same wait at the gate, and end likewise. Under the run's key, which
// every attempt of another item function shares, the run ends.
func (r *runner[T]) outlasted(a *attempt, d time.Duration, now time.Time) {
	r.settle(&r.results[a.idx], r.unfinished(a.idx), now)
	why := fmt.Errorf("%w: a wait of %v would outlast the context deadline: %w", ErrThrottled, d, context.DeadlineExceeded)
	if !a.state.keyed {
		r.halt(why)
	} else if r.lapsed == nil {
		r.lapsed = why
	}
}

// halt stops dispatch for good, keeping the first reason given.
func (r *runner[T]) halt(why error) {
	if !r.stopped {
		r.stopped, r.stop = true, why
	}
}

func (r *runner[T]) snapshot() Summary {
	s := r.sum
	s.Elapsed = time.Since(r.started)
	return s
}

func (r *runner[T]) progress(idx int) {
	if r.opts.OnProgress != nil {
		paused, until := r.gate.paused()
		if !paused {
			until = time.Time{}
		}
		r.opts.OnProgress(Progress{Summary: r.snapshot(), Index: idx, Paused: paused, Until: until})
	}
}

func (r *runner[T]) progressPause() { r.progress(-1) }

// record adds an event of attempt a at now to the run's timeline, under
// the attempt's key.
func (r *runner[T]) record(a *attempt, kind eventKind, now time.Time) {
	r.tl.record(a.state.permit.Key, a.state.host, a.state.tr, kind, now)
}

// recordSent adds attempt a's departure to the timeline when no request of
// HTTP reported it. An attempt of another item function left when the gate
// let it through. An attempt of HTTP whose Transport reports no departures
// (no net/http underneath) left when it entered its key, if answered.
func (r *runner[T]) recordSent(a *attempt) {
	switch st := &a.state; {
	case !st.keyed && st.passed:
		r.record(a, evSent, a.start)
	case st.keyed && st.wrote.Load() == 0 && st.status.Load() != 0:
		r.record(a, evSent, st.entered)
	}
}

// report settles what the loop left open and builds the Report and error.
func (r *runner[T]) report() (*Report, error) {
	now := time.Now()
	for _, idx := range r.retry { // throttled, never retried
		r.settle(&r.results[idx], r.unfinished(idx), now)
	}
	for _, q := range r.later { // requeued or held back, never tried again
		r.settle(&r.results[q.idx], r.unfinished(q.idx), now)
	}
	r.retry, r.later = nil, nil
	if r.journal != nil {
		if err := r.journal.close(); err != nil {
			r.halt(r.journalErr(err))
		}
	}
	r.tl.finish(now)
	rep := &Report{Results: r.results, Summary: r.snapshot(), tl: r.tl}
	s := rep.Summary
	if s.Failed == 0 && s.Interrupted == 0 && s.InDoubt == 0 && s.NotStarted == 0 && !r.stopJournal() {
		return rep, nil // the context may have ended after the last start: nothing was lost
	}
	stop := r.stop
	if stop == nil {
		stop = r.lapsed
	}
	e := &Error{Failed: s.Failed, Interrupted: s.Interrupted, InDoubt: s.InDoubt, NotStarted: s.NotStarted, Stop: stop}
	for i := range r.results {
		if res := &r.results[i]; res.Outcome == Failed {
			e.First = &ItemError{Index: i, ID: res.ID, Status: res.Status, Err: res.Err}
			break
		}
	}
	if ie, ok := e.Stop.(*ItemError); ok && e.First != nil && ie.Index == e.First.Index {
		e.First = ie
	}
	return rep, e
}
