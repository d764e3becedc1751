package pace

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacehttp/pace/throttle"
)

// cellOf returns key's compact limit state in k and whether it is tracked.
func cellOf(k *Keyed, key string) (words, bool) {
	s, h := k.locate(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.cells[h]
	return w, ok
}

// TestKeyedWaitFastMatchesReserve checks Wait's fast path (waitFast) against
// ReserveAt, which always takes the general path: on random schedules, at
// the same instants, a Wait that must not wait (maxWait 1ns) admits exactly
// when ReserveAt books at once, leaves the same state, and asks for Depart
// (Track) exactly when the limit binds after it.
func TestKeyedWaitFastMatchesReserve(t *testing.T) {
	limits := []Limit{
		TokenBucket(Every(100*time.Millisecond), 3),
		TokenBucket(Every(100*time.Millisecond), 1),
		LeakyBucket(PerSecond(10), LeakyOptions{Queue: 3, Slack: 2}),
		LeakyBucket(PerSecond(10), LeakyOptions{Queue: 2}),
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, l := range limits {
		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			kw := newTestKeyed(t, l, KeyedOptions{})
			kr := newTestKeyed(t, l, KeyedOptions{})
			kr.epoch = kw.epoch
			seen := map[bool]int{} // admissions by Track
			for step := range 300 {
				if rng.IntN(2) == 0 {
					time.Sleep(time.Duration(rng.Int64N(int64(150 * time.Millisecond))))
				}
				key := []string{"a", "b"}[rng.IntN(2)]
				p, err := kw.Wait(ctx, key, time.Nanosecond)
				r, rerr := kr.ReserveAt(time.Now(), key, 1, time.Nanosecond)
				if (err == nil) != (rerr == nil) || (err == nil && r.Delay != 0) {
					t.Fatalf("%v step %d: Wait = %v, ReserveAt = %v, %v", l, step, err, r.Delay, rerr)
				}
				if err != nil {
					if !errors.Is(err, ErrWaitTooLong) && !errors.Is(err, ErrQueueFull) {
						t.Fatalf("%v step %d: Wait = %v", l, step, err)
					}
					continue
				}
				w, _ := cellOf(kr, key)
				wantTrack := kr.alg.binds(&cell{a: w.a, b: w.b}, r.at)
				seen[wantTrack]++
				if p.Track != wantTrack {
					t.Fatalf("%v step %d: Track = %v, want %v", l, step, p.Track, wantTrack)
				}
				if p.Track {
					kw.Settle(p, throttle.Outcome{Sent: true, Response: true}) // leave the queue
				}
				gw, okw := cellOf(kw, key)
				gr, okr := cellOf(kr, key)
				if gw != gr || okw != okr {
					t.Fatalf("%v step %d: state after Wait %v (%v), after ReserveAt %v (%v)", l, step, gw, okw, gr, okr)
				}
			}
			if l.alg.maxN() > 2 && (seen[false] == 0 || seen[true] == 0) {
				t.Errorf("%v: admissions by Track %v: the schedule misses a path", l, seen)
			}
		})
	}
}

// TestKeyedStatesCount checks the count of keyStates that lets Settle of a
// plain outcome skip the lock: it follows creation and sweeping, and a
// plain Settle still answers a key whose keyState appeared after its Wait.
func TestKeyedStatesCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		k := newTestKeyed(t, TokenBucket(PerSecond(100), 10), KeyedOptions{})
		p, err := k.Wait(ctx, "a", 0)
		if err != nil {
			t.Fatal(err)
		}
		if n := k.states.Load(); n != 0 {
			t.Fatalf("states = %d before any pause, want 0", n)
		}
		k.Settle(p, throttle.Outcome{Sent: true, Response: true}) // the lock-free path
		// A throttle of another request of the key, after p's Wait.
		q, err := k.Wait(ctx, "a", 0)
		if err != nil {
			t.Fatal(err)
		}
		k.Settle(q, throttle.Outcome{Sent: true, Response: true, Pause: time.Second})
		if n := k.states.Load(); n != 1 {
			t.Fatalf("states = %d after a throttle, want 1", n)
		}
		p2, err := k.Wait(ctx, "b", 0)
		if err != nil {
			t.Fatal(err)
		}
		e := k.open(1, "a", false)
		strikes := e.st.th.strikes
		e.close(false)
		if strikes != 1 {
			t.Fatalf("strikes = %d after one throttle, want 1", strikes)
		}
		k.Settle(throttle.Permit{Key: "a", Gen: p.Gen}, throttle.Outcome{Sent: true, Response: true}) // an answer of a's earlier request
		e = k.open(1, "a", false)
		strikes = e.st.th.strikes
		e.close(false)
		if strikes != 0 {
			t.Fatalf("strikes = %d after an answer, want 0 (a plain Settle must still find the keyState)", strikes)
		}
		k.Settle(p2, throttle.Outcome{Sent: true, Response: true})
		time.Sleep(time.Second + time.Duration(staleAfter))
		k.sweepAt(time.Now())
		if n := k.states.Load(); n != 0 {
			t.Fatalf("states = %d after the sweep, want 0", n)
		}
		k.PauseUntil("c", time.Now().Add(time.Second))
		if n := k.states.Load(); n != 1 {
			t.Fatalf("states = %d after PauseUntil, want 1", n)
		}
		time.Sleep(2 * time.Second)
		k.sweepAt(time.Now())
		if n := k.states.Load(); n != 0 {
			t.Fatalf("states = %d after the pause's sweep, want 0", n)
		}
	})
}
