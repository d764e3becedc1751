package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/retryrule"
	"github.com/pacehttp/pace/throttle"
)

// maxLearnedKeys bounds the keys whose learned limit a run remembers. Past
// it the learned limits are forgotten and learned again. So a run over many
// hosts cannot grow memory without bound.
const maxLearnedKeys = 4096

// gate holds a run's throttles per key. It holds pace's throttle engine: a
// [pace.Keyed] with no limit, which pauses a key, sends one probe when the
// pause ends, and holds the key's other attempts until the probe's answer.
// It holds the limit learned per key from its throttles (see learner).
// Every attempt passes it before it is sent. An attempt of the function Run
// was given passes under the run's own key "". An attempt of [HTTP] also
// passes under its request's key (gateKey). Safe for concurrent use.
type gate struct {
	engine *pace.Keyed

	mu        sync.Mutex
	keys      map[string]*keyInfo
	throttled int       // keys paused or waiting for their probe's answer
	until     time.Time // the latest pause end of those keys, for Progress
}

// keyInfo is what a run knows of one key beyond its throttle.
type keyInfo struct {
	learn     learner
	busy      time.Time // a client-side limit refused an attempt of the key until then (see refused)
	until     time.Time // the end of the key's latest pause
	throttled bool      // paused, or waiting for its probe's answer
	gen       uint64    // the engine's count of the key's pauses, as far as seen
}

func newGate() *gate {
	k, err := pace.NewKeyed(pace.Limit{}, pace.KeyedOptions{})
	if err != nil {
		panic(err) // the zero Limit is valid
	}
	return &gate{engine: k, keys: make(map[string]*keyInfo)}
}

// info returns key's keyInfo; g.mu must be held.
func (g *gate) info(key string) *keyInfo {
	ki := g.keys[key]
	if ki == nil {
		if len(g.keys) >= maxLearnedKeys {
			for k, ki := range g.keys {
				if !ki.throttled {
					delete(g.keys, k)
				}
			}
		}
		ki = &keyInfo{}
		g.keys[key] = ki
	}
	return ki
}

// pass waits until an attempt of key may be sent, and returns its Permit,
// to be settled once. With inLine (an attempt of [HTTP]), an attempt of a
// paused key does not wait for the pause. It is refused at once (see
// waitInLine), booking nothing.
//
// The waits, in order:
//
//   - the key's learned limit, and the end of its latest client-side
//     refusal (see refused);
//   - the run's ceiling on starts (ceiling, Options.Rate; nil: none). Both
//     book the start, the ceiling last because its promise is exact.
//   - the key's throttle, last, so that nothing of a paused key leaves: its
//     pause, and if another attempt is its probe, that probe's answer. A
//     throttled answer sends it back to wait for the next pause.
//
// An attempt that had to wait for the throttle and is not the probe takes
// the ceiling and the learned limit again before it goes. So the attempts
// a probe's answer releases together still leave at the allowed rate. A
// probe that waited takes the ceiling again. A start may then be counted
// twice, never zero times. With took, the
// attempt has already taken the ceiling for this start.
//
// It returns a *pace.WaitError wrapping ctx.Err() when ctx ends first. It
// returns one matching pace.ErrWaitExceedsDeadline when a wait would
// outlast ctx's deadline. Either comes with a Permit of key that admits
// nothing (settling it is harmless).
func (g *gate) pass(ctx context.Context, key string, ceiling *pace.Shaper, took, inLine bool) (throttle.Permit, error) {
	for ; ; took = false {
		if inLine {
			if d := time.Until(g.engine.PausedUntil(key)); d > 0 {
				return throttle.Permit{Key: key}, waitInLine(ctx, key, d)
			}
		}
		if err := g.learned(ctx, key); err != nil {
			return throttle.Permit{Key: key}, err
		}
		if ceiling != nil && !took {
			if err := ceiling.Wait(ctx, 0); err != nil {
				return throttle.Permit{Key: key}, err
			}
		}
		p, err := g.engine.Wait(ctx, key, 0)
		switch {
		case errors.Is(err, pace.ErrThrottled):
			continue // the probe was throttled again: wait for the next one
		case err != nil:
			return p, err
		case p.Held > 0 && !p.Probe:
			g.engine.Settle(p, throttle.Outcome{}) // released by the probe's answer: start again
			continue
		case p.Held > 0 && ceiling != nil:
			// The probe leaves now, after its key's pause: the ceiling
			// counts this start again, where it happens.
			if err := ceiling.Wait(ctx, 0); err != nil {
				g.engine.Settle(p, throttle.Outcome{}) // not sent: the probe's role passes on
				return throttle.Permit{Key: key}, err
			}
		}
		return p, nil
	}
}

// learned waits until key's learned limit allows a start, and records the
// start. It also waits until the wait a client-side limit named, when it
// last refused an attempt of the key, has passed. A wait that would
// outlast ctx's deadline fails at once, as pace's limiters fail it. Its
// error is a *pace.WaitError matching pace.ErrWaitExceedsDeadline and
// context.DeadlineExceeded.
func (g *gate) learned(ctx context.Context, key string) error {
	for {
		now := time.Now()
		g.mu.Lock()
		ki := g.info(key)
		d := max(ki.learn.wait(now), ki.busy.Sub(now))
		if d <= 0 {
			ki.learn.started(now)
			g.mu.Unlock()
			return nil
		}
		g.mu.Unlock()
		if dl, ok := ctx.Deadline(); ok && now.Add(d).After(dl) {
			return &pace.WaitError{Key: key, Delay: d, Err: errWaitExceedsDeadline}
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return &pace.WaitError{Key: key, Delay: d, Err: ctx.Err()}
		}
	}
}

// settle records at now how the attempt admitted by p, which started at
// start, ended. A throttle pauses its key for pause (> 0). An answer
// (answered) closes the key if p was its probe, and extends the key's
// streak of accepted starts. An attempt that got no answer hands a probe's
// role on. It reports whether the key changed state. That is a throttle
// that paused an open key (neither paused nor waiting for its probe's
// answer), or a probe's answer that opened it again. A throttle of an
// attempt that left before the key's latest pause is old news once the key
// is open again (see pace's throttle engine). It changes nothing.
func (g *gate) settle(p throttle.Permit, start, now time.Time, answered bool, pause time.Duration) bool {
	g.engine.Settle(p, throttle.Outcome{At: now, Sent: answered || pause > 0, Response: answered || pause > 0, Pause: pause})
	g.mu.Lock()
	defer g.mu.Unlock()
	ki := g.info(p.Key)
	switch {
	case pause > 0:
		if !ki.throttled && p.Gen < ki.gen {
			return false // old news
		}
		news := !ki.throttled
		if news {
			ki.throttled = true
			g.throttled++
		}
		ki.gen = max(ki.gen, p.Gen+1)
		if until := now.Add(pause); until.After(ki.until) {
			ki.until = until
			if until.After(g.until) {
				g.until = until
			}
		}
		return news
	case !answered:
	case p.Probe:
		ki.learn.resume(now, start)
		if ki.throttled && !ki.until.After(now) {
			ki.throttled = false
			g.throttled--
			return true
		}
	default:
		ki.learn.accepted(start)
	}
	return false
}

// refused records at now that a client-side limit refused the attempt
// admitted by p, nothing sent, and named a wait of delay. The key's other
// attempts wait at the gate until it has passed; they would be refused
// too. So the attempts refused together do not all come back at once. The
// key is not paused and learns nothing: the refusal is no news of the
// server's.
func (g *gate) refused(p throttle.Permit, now time.Time, delay time.Duration) {
	g.engine.Settle(p, throttle.Outcome{At: now})
	g.mu.Lock()
	defer g.mu.Unlock()
	if ki := g.info(p.Key); now.Add(delay).After(ki.busy) {
		ki.busy = now.Add(delay)
	}
}

// waitInLine returns the gate's refusal of an attempt of key, paused for d
// more, so that its item waits in Run's line, not in a slot. It is a
// *pace.WaitError wrapping errInLine, which counts as no attempt (see
// runner.inLine). When the pause would outlast ctx's deadline, it is one
// matching pace.ErrWaitExceedsDeadline, a client-side refusal.
func waitInLine(ctx context.Context, key string, d time.Duration) error {
	if dl, ok := ctx.Deadline(); ok && time.Now().Add(d).After(dl) {
		return &pace.WaitError{Key: key, Delay: d, Err: errWaitExceedsDeadline}
	}
	return &pace.WaitError{Key: key, Delay: d, Err: errInLine}
}

// errInLine is the gate's refusal of an attempt whose key is paused (see
// waitInLine).
var errInLine = fmt.Errorf("%w: batch: key paused, the item waits in line", pace.ErrRateLimited)

// errWaitExceedsDeadline is the gate's refusal of a wait that would outlast
// the context's deadline, as pace's limiters give it.
var errWaitExceedsDeadline = fmt.Errorf("%w: %w", pace.ErrWaitExceedsDeadline, context.DeadlineExceeded)

// paused reports whether a key of the run is paused or waits for its
// probe's answer, and the latest end of those keys' pauses.
func (g *gate) paused() (bool, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.throttled > 0, g.until
}

// pauseEnd returns the end of key's latest pause, and whether the key is
// paused or waits for its probe's answer.
func (g *gate) pauseEnd(key string) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ki := g.info(key)
	return ki.until, ki.throttled
}

// learnedRate returns key's learned limit, or the zero Rate.
func (g *gate) learnedRate(key string) pace.Rate {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.info(key).learn.rate()
}

// attemptKey is the context key of an attempt's state.
type attemptKey struct{}

// attemptState is what an attempt's context carries: its status recorder
// (see [RecordStatus]), its place at the gate, and its item's in the
// journal.
type attemptState struct {
	status  atomic.Int64
	gate    *gate
	ceiling *pace.Shaper    // Options.Rate, or nil
	permit  throttle.Permit // under the run's key "", or the key HTTP entered
	keyed   bool            // HTTP entered a key of its own
	item    *item           // the item's place in the journal
	// statuses are the Statuses of the client's pace.Transport for HTTP's
	// request (nil: the defaults), which the item's requeues follow.
	statuses []int
	// pauses are Options.Backoff and MaxBackoff, which the client's
	// pace.Transport follows for the pauses it sets on HTTP's keys.
	pauses retryrule.Pauses

	// For the run's timeline (see Report.WriteHTML).
	tl      *timeline
	passed  bool            // the gate let the attempt through under the run's key
	host    bool            // the key HTTP entered is the request's host, shown as it is
	tr      *pace.Transport // the client's Transport, when HTTP's is one
	entered time.Time       // when HTTP entered its key
	wrote   atomic.Int32    // the requests of HTTP that left, as net/http reports them
	// heldBack: the gate under HTTP's key refused the attempt (its pause,
	// or the context ending while it waited): nothing was sent.
	heldBack bool
}

// enter passes the attempt through the gate under key (the key of an
// [HTTP] request, see gateKey) instead of the run's key, which it settles
// as answered.
// From then on the attempt is key's, even when the gate refuses it (its
// error is then the gate's).
// Only the goroutine running the attempt calls it, before Run reads the
// state.
func (a *attemptState) enter(ctx context.Context, key string) error {
	if a.gate == nil || a.keyed {
		return nil
	}
	now := time.Now()
	a.gate.settle(a.permit, now, now, true, 0)             // the run's key lets it through
	p, err := a.gate.pass(ctx, key, a.ceiling, true, true) // the run's key took the ceiling
	a.permit, a.keyed = p, true                            // also when refused: the attempt is key's now
	a.heldBack = err != nil
	return err
}

// attemptOf returns the attempt state of ctx, or nil.
func attemptOf(ctx context.Context) *attemptState {
	a, _ := ctx.Value(attemptKey{}).(*attemptState)
	return a
}
