package pace

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestCompositeLeakyQueue: a pacer's queue bounds the whole wait of a
// composite. With a pacer that lets one caller wait (about 100ms) and a
// window that is full until the next minute, the call is refused with
// ErrQueueFull and nothing is booked; with room for 100s of queue it waits
// the 59s.
func TestCompositeLeakyQueue(t *testing.T) {
	strict := mustComposite(t, LeakyBucket(PerSecond(10), LeakyOptions{Queue: 1}), FixedWindow(PerMinute(1)))
	runWinAllow(t, strict, []winAllow{{0, 1, true}})
	before := compositeSnapshot(strict)
	if r, err := strict.ReserveAt(winAt(time.Second), 1, 0); !errors.Is(err, ErrQueueFull) {
		t.Errorf("ReserveAt behind a full minute with a pacer that queues one = %v, %v; want ErrQueueFull", r.Delay, err)
	}
	if after := compositeSnapshot(strict); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused ReserveAt changed the parts: %+v → %+v", before, after)
	}
	runWinAllow(t, strict, []winAllow{{time.Second, 1, false}, {time.Minute, 1, true}})

	queued := mustComposite(t, LeakyBucket(PerSecond(10), LeakyOptions{Queue: 1000}), FixedWindow(PerMinute(1)))
	runWinAllow(t, queued, []winAllow{{0, 1, true}})
	runWinReserve(t, queued, []winReserve{{time.Second, 1, 59 * time.Second, nil}})
}

// TestCompositeBucketSameInstant: a token bucket inside a composite books
// the instants at which the calls really go. Bucket 1/s burst 1 with a log
// of 1 per 1.5s: calls go at 0, 1.5s and 3s, so the bucket's theoretical
// arrival time (TAT) ends at 4s. Had it been booked at its own earliest
// instants (1s, then 2.5s) it would end at 3.5s, a bucket refilled for calls
// that had not gone yet: the next call at 3.5s would then come 0.5s after
// the one at 3s, faster than 1/s with a burst of 1.
func TestCompositeBucketSameInstant(t *testing.T) {
	ms := time.Millisecond
	l := mustComposite(t, TokenBucket(PerSecond(1), 1), SlidingLog(Rate{N: 1, Per: 1500 * ms}))
	runWinReserve(t, l, []winReserve{
		{0, 1, 0, nil},
		{0, 1, 1500 * ms, nil}, // bucket: 1s; log: 1.5s
		{0, 1, 3000 * ms, nil}, // bucket: 2.5s; log: 3s
	})
	got := compositeSnapshot(l)
	if want := sinceEpoch(l.epoch, winAt(4*time.Second)); got[0].A != want {
		t.Errorf("bucket TAT = %d, want %d (booked at 0, 1.5s, 3s)", got[0].A, want)
	}
	runWinAllow(t, l, []winAllow{{3999 * ms, 1, false}, {4500 * ms, 1, true}})
}

// partCheck wraps a part of a composite in tests and records the first
// booking that the part would not have made on its own: one at an instant
// it does not admit, or one further from now than its queue allows.
type partCheck struct {
	algorithm
	err *error
}

func (p partCheck) book(c *cell, now, t int64, n int) {
	if *p.err == nil {
		if u, err := p.algorithm.earliest(c, t, n); err != nil || u != t {
			*p.err = fmt.Errorf("%v booked %d units at %d; on its own it gives %d, %v", p.algorithm, n, t, u, err)
		}
		if b := waitBound(p.algorithm); t-now > b {
			*p.err = fmt.Errorf("%v booked at %d, %d after now, beyond its queue %d", p.algorithm, t, t-now, b)
		}
	}
	p.algorithm.book(c, now, t, n)
}

// waitBound and depart are the wrapped part's.
func (p partCheck) waitBound() int64 { return waitBound(p.algorithm) }

func (p partCheck) depart(c *cell, now, t, left int64) { departOne(p.algorithm, c, now, t, left) }

// checked wraps alg in a partCheck that records into err.
func checked(alg algorithm, err *error) algorithm { return partCheck{algorithm: alg, err: err} }

// randomMixedPart returns a random window limit, token bucket or pacer, and
// for window limits their promise.
func randomMixedPart(rng *rand.Rand) (Limit, winPromise) {
	r := winRandomRate(rng)
	switch k := rng.IntN(len(windowKinds) + 2); k {
	case len(windowKinds):
		return TokenBucket(r, 1+rng.IntN(4)), nil
	case len(windowKinds) + 1:
		o := LeakyOptions{Queue: rng.IntN(4), Slack: rng.IntN(3)}
		if rng.IntN(2) == 0 {
			o.MaxDelay = time.Duration(rng.Int64N(3 * int64(r.Per)))
		}
		return LeakyBucket(r, o), nil
	default:
		return windowKinds[k].limit(r), windowKinds[k].check(r)
	}
}

// TestCompositeMixedProperties checks on random schedules that a composite
// of window limits, token buckets and pacers only ever books what each part
// admits on its own at that instant, within each pacer's queue from now,
// keeps every window part's promise, and every GCRA part's promise (at most
// capacity + ⌊(y−x)/interval⌋ units in any [x, y]) at the end.
func TestCompositeMixedProperties(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(20250301, 7))
	for s := range winPropertySchedules {
		var (
			parts    []algorithm
			promises []winPromise
			gcras    []gcra
			partErr  error
			scale    = Rate{N: 1 << 30}
		)
		for range 1 + rng.IntN(3) {
			l, p := randomMixedPart(rng)
			if l.Err() != nil {
				t.Fatalf("random part: %v", l.Err())
			}
			parts = append(parts, checked(l.alg, &partErr))
			if p != nil {
				promises = append(promises, p)
			}
			switch a := l.alg.(type) {
			case *bucketAlg:
				gcras = append(gcras, a.gcra)
			case *leakyAlg:
				gcras = append(gcras, a.gcra)
			}
			scale.N = min(scale.N, l.alg.maxN())
			scale.Per = max(scale.Per, time.Duration(l.alg.span()))
		}
		windows := allPromises(promises...)
		check := func(books []winBooking, t int64) error {
			if partErr != nil {
				return partErr
			}
			return windows(books, t)
		}
		alg := newComposite(parts)
		d := newWinDriver(alg, check, 1+rng.Int64N(10*int64(scale.Per)))
		if err := winRunSchedule(rng, d, scale, 10+rng.IntN(40)); err != nil {
			t.Fatalf("schedule %d, %v: %v", s, alg, err)
		}
		var live []gcraBooking
		for _, b := range d.standing() {
			live = append(live, gcraBooking{at: b.at, n: b.n, live: true})
		}
		for _, g := range gcras {
			if msg := gcraPromise(live, g.c, g.i); msg != "" {
				t.Fatalf("schedule %d, %v: %s", s, alg, msg)
			}
		}
	}
}
