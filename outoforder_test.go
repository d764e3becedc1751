package pace

import (
	"sync"
	"testing"
	"time"
)

// TestKeyedOutOfOrderInstants: callers read the clock before taking a
// shard's lock, so instants a microsecond apart can arrive in the wrong
// order. A sliding log with room must still admit them, and report what is
// really left (a new user found 70 spurious 429s from the middleware).
func TestKeyedOutOfOrderInstants(t *testing.T) {
	k, err := NewKeyed(SlidingLog(PerSecond(10)), KeyedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k.AdmitAt(now, "x", 1)
	k.AdmitAt(now.Add(time.Microsecond), "x", 1)
	q, ok := k.AdmitAt(now, "x", 1) // a microsecond "late"
	if !ok || q.Remaining != 7 {
		t.Fatalf("AdmitAt(a µs before the latest) = %v, Remaining %d; want admitted, 7 left", ok, q.Remaining)
	}
	r, err := k.ReserveAt(now, "x", 1, 0)
	if err != nil || r.Delay != time.Microsecond {
		t.Fatalf("ReserveAt(a µs before the latest) = %+v, %v; want a delay of 1µs counted from now", r, err)
	}
}

// TestSlidingLogAllowConcurrent: Allow from many goroutines never refuses
// while the limit has room, whatever order their clock readings reach the
// lock in.
func TestSlidingLogAllowConcurrent(t *testing.T) {
	l, err := NewShaper(SlidingLog(Rate{N: 1 << 20, Per: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for range 8 {
		wg.Go(func() {
			n := 0
			for range 2000 {
				if !l.Allow() {
					n++
				}
			}
			mu.Lock()
			refused += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if refused != 0 {
		t.Fatalf("%d of 16000 calls refused with room for %d", refused, 1<<20)
	}
}
