package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"
)

// A keyed store is measured twice. With one key, every call decides on the
// same state, at the never-reached rate of limiter_test.go, so every call is
// admitted. With a million keys, each key carries a per-client quota of 60 a
// minute with bursts of 60 and is touched once, in order, before the clock
// starts; the timed calls then walk the keys in a fixed random order, so
// each call finds its state cold in memory, as a busy server's would be. (A
// walk in creation order would flatter the stores that allocate one object
// per key: consecutive keys' objects sit next to each other in memory.) The quota is long enough that no
// store forgets a key during the benchmark (pace's Keyed sweeps a key only
// once its bucket is full again, and sweeps a shard at most every 60 s).
//
// "B/key" is the growth of the live heap, after garbage collection, from an
// empty store to one holding the million keys, divided by a million. The
// key strings are allocated before the empty store is measured and kept
// alive throughout, so their own bytes are not counted; a store that keeps
// a key keeps a reference to the caller's string, and that reference (the
// string header in its map) is counted.

const manyKeys = 1_000_000

var (
	keysOnce    sync.Once
	keysCreated []string // in creation order
	keysWalk    []string // the same strings in a fixed random order
)

// theKeys returns manyKeys distinct keys like those of an API's clients, in
// creation order and in a fixed random order.
func theKeys() (created, walk []string) {
	keysOnce.Do(func() {
		keysCreated = make([]string, manyKeys)
		for i := range keysCreated {
			keysCreated[i] = fmt.Sprintf("client-%07d", i)
		}
		keysWalk = slices.Clone(keysCreated)
		r := rand.New(rand.NewPCG(1, 2))
		r.Shuffle(len(keysWalk), func(i, j int) { keysWalk[i], keysWalk[j] = keysWalk[j], keysWalk[i] })
	})
	return keysCreated, keysWalk
}

// quota is the per-key limit of the million-key benchmarks.
var quota = struct {
	n   int
	per time.Duration
}{60, time.Minute}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// store is one contestant: allow decides for key on the clock.
type store struct {
	allow func(key string) bool
	close func()
}

// contestant builds an empty store limited to n per per with the same
// burst n.
type contestant struct {
	name string
	make func(b *testing.B, n int, per time.Duration) store
}

var contestants = []contestant{
	{"pace.Keyed.AllowAt", func(b *testing.B, n int, per time.Duration) store {
		k, err := pace.NewKeyed(pace.TokenBucket(pace.Rate{N: n, Per: per}, n), pace.KeyedOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return store{allow: func(key string) bool { return k.AllowAt(time.Now(), key, 1) }}
	}},
	{"pace.Keyed.Allow", func(b *testing.B, n int, per time.Duration) store {
		k, err := pace.NewKeyed(pace.TokenBucket(pace.Rate{N: n, Per: per}, n), pace.KeyedOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return store{allow: k.Allow}
	}},
	{"pace.Keyed.Wait", func(b *testing.B, n int, per time.Duration) store {
		k, err := pace.NewKeyed(pace.TokenBucket(pace.Rate{N: n, Per: per}, n), pace.KeyedOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		return store{allow: func(key string) bool { _, err := k.Wait(ctx, key, time.Nanosecond); return err == nil }}
	}},
	{"x-time-rate+sync.Map", func(b *testing.B, n int, per time.Duration) store {
		var m sync.Map // string -> *rate.Limiter
		lim := rate.Limit(float64(n) / per.Seconds())
		return store{allow: func(key string) bool {
			v, ok := m.Load(key)
			if !ok {
				v, _ = m.LoadOrStore(key, rate.NewLimiter(lim, n))
			}
			return v.(*rate.Limiter).Allow()
		}}
	}},
	{"x-time-rate+mutex-map", func(b *testing.B, n int, per time.Duration) store {
		var mu sync.Mutex
		m := make(map[string]*rate.Limiter)
		lim := rate.Limit(float64(n) / per.Seconds())
		return store{allow: func(key string) bool {
			mu.Lock()
			l, ok := m[key]
			if !ok {
				l = rate.NewLimiter(lim, n)
				m[key] = l
			}
			mu.Unlock()
			return l.Allow()
		}}
	}},
	{"sethvargo-memorystore.Take", func(b *testing.B, n int, per time.Duration) store {
		s, err := memorystore.New(&memorystore.Config{Tokens: uint64(n), Interval: per})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		return store{
			allow: func(key string) bool {
				_, _, _, ok, err := s.Take(ctx, key)
				return ok && err == nil
			},
			close: func() { closeStore(b, s) },
		}
	}},
}

func closeStore(b *testing.B, s limiter.Store) {
	if err := s.Close(context.Background()); err != nil {
		b.Error(err)
	}
}

// BenchmarkKeyed1Key is the cost of one decision in a keyed store holding
// one key, from one goroutine and from all of them.
func BenchmarkKeyed1Key(b *testing.B) {
	for _, c := range contestants {
		b.Run(c.name, func(b *testing.B) {
			b.Run("serial", func(b *testing.B) {
				s := c.make(b, fastRate, time.Second)
				if s.close != nil {
					defer s.close()
				}
				var ok int64
				b.ReportAllocs()
				for b.Loop() {
					if s.allow("client-0000001") {
						ok++
					}
				}
				report(b, ok)
			})
			b.Run("parallel", func(b *testing.B) {
				s := c.make(b, fastRate, time.Second)
				if s.close != nil {
					defer s.close()
				}
				parallel(b, func() bool { return s.allow("client-0000001") })
			})
		})
	}
}

// BenchmarkKeyed1MKeys is the cost of one decision, and the bytes per key,
// of a keyed store holding a million keys.
func BenchmarkKeyed1MKeys(b *testing.B) {
	keys, walk := theKeys()
	for _, c := range contestants {
		b.Run(c.name, func(b *testing.B) {
			before := liveHeap()
			s := c.make(b, quota.n, quota.per)
			if s.close != nil {
				defer s.close()
			}
			for _, k := range keys {
				if !s.allow(k) {
					b.Fatalf("first call for %s refused", k)
				}
			}
			perKey := float64(int64(liveHeap())-int64(before)) / manyKeys
			b.Run("serial", func(b *testing.B) {
				var ok int64
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					if s.allow(walk[i]) {
						ok++
					}
					if i++; i == len(walk) {
						i = 0
					}
				}
				report(b, ok)
				b.ReportMetric(perKey, "B/key")
			})
			b.Run("parallel", func(b *testing.B) {
				var ok, start atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := int(start.Add(manyKeys/7)) % manyKeys // goroutines walk apart
					var n int64
					for pb.Next() {
						if s.allow(walk[i]) {
							n++
						}
						if i++; i == len(walk) {
							i = 0
						}
					}
					ok.Add(n)
				})
				report(b, ok.Load())
				b.ReportMetric(perKey, "B/key")
			})
			runtime.KeepAlive(s)
		})
	}
}
