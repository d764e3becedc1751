package pace

import (
	"testing"
	"time"
)

// winMaxFuzzOps bounds the operations one fuzz input runs, so that checking
// the promise stays cheap.
const winMaxFuzzOps = 300

// winFuzzRate maps fuzz inputs to a valid rate: N from 1 to 6 and Per from
// 1 ns up to maxPer (2^62−1 ns, the longest Rate.validate accepts), so that
// huge windows reach the end of int64 time.
func winFuzzRate(n, per uint16, shift uint8) Rate {
	return Rate{N: 1 + int(n%6), Per: min(time.Duration(int64(1+int(per))<<(shift%47)), maxPer)}
}

// winFuzzOps runs ops, two bytes per operation (see winDriver.run), against d.
func winFuzzOps(t *testing.T, d *winDriver, r Rate, ops []byte) {
	t.Helper()
	for i := 0; i+1 < len(ops) && i < 2*winMaxFuzzOps; i += 2 {
		if err := d.run(ops[i], ops[i+1], r); err != nil {
			t.Fatalf("%v, op %d: %v", d.l, i/2, err)
		}
	}
}

// winFuzzSeeds are operation sequences that cover every operation, cancels
// and the clock stepping back.
var winFuzzSeeds = [][]byte{
	{4, 32, 4, 64, 9, 33, 9, 96, 14, 0, 4, 32, 0, 200, 4, 32},
	{9, 32, 9, 32, 9, 32, 3, 255, 4, 32, 14, 1, 14, 2, 4, 32, 1, 64, 10, 96},
	{13, 37, 13, 5, 12, 1, 12, 0, 15, 3, 7, 255, 3, 128, 8, 32, 2, 255, 5, 64},
}

func fuzzWindow(f *testing.F, limit func(Rate) Limit, p func(Rate) winPromise) {
	for i, ops := range winFuzzSeeds {
		f.Add(uint16(i+1), uint16(999), uint8(i*7), ops)
		f.Add(uint16(i), uint16(65535), uint8(46), ops)
	}
	f.Fuzz(func(t *testing.T, n, per uint16, shift uint8, ops []byte) {
		r := winFuzzRate(n, per, shift)
		d := newWinDriver(limit(r).alg, p(r), 1+int64(r.Per)/3)
		winFuzzOps(t, d, r, ops)
	})
}

// FuzzFixedWindow checks that random operation sequences, including the
// clock stepping back, never put more than N units in an aligned window,
// never panic and never return a negative delay.
func FuzzFixedWindow(f *testing.F) { fuzzWindow(f, FixedWindow, fixedPromise) }

// FuzzSlidingLog checks that random operation sequences never put more than
// N units in any window [t, t+Per).
func FuzzSlidingLog(f *testing.F) { fuzzWindow(f, SlidingLog, logPromise) }

// FuzzSlidingCounter checks the counter's documented bounds: N per aligned
// window and 2N−1 in any window [t, t+Per).
func FuzzSlidingCounter(f *testing.F) { fuzzWindow(f, SlidingCounter, counterPromise) }

// FuzzComposite checks that a composite of two or three limits (window
// limits, token buckets, pacers) only books what each part admits on its own
// at that instant and within each pacer's queue, keeps every window part's
// promise, and at the end every GCRA part's promise.
func FuzzComposite(f *testing.F) {
	for i, ops := range winFuzzSeeds {
		f.Add(uint8(i*5), uint32(0x0304), uint32(0x03e8_0010), uint8(i*9), ops)
		f.Add(uint8(0x80|i), uint32(0x0102), uint32(0xffff_0001), uint8(40), ops)
		f.Add(uint8(0xbf), uint32(0x0500_0203), uint32(0x0100_0040), uint8(i*11), ops)
	}
	f.Fuzz(func(t *testing.T, kinds uint8, ns, pers uint32, shift uint8, ops []byte) {
		var (
			parts    []algorithm
			promises []winPromise
			gcras    []gcra
			partErr  error
			scale    = Rate{N: 6}
		)
		count := 2
		if kinds&0x80 != 0 {
			count = 3
		}
		for i := range count {
			r := winFuzzRate(uint16(ns>>(8*i)), uint16(pers>>(10*i)), shift+uint8(3*i))
			var l Limit
			switch k := int(kinds>>(2*i)) & 3; {
			case k < len(windowKinds):
				l = windowKinds[k].limit(r)
				promises = append(promises, windowKinds[k].check(r))
			case ns>>(24+i)&1 == 0:
				l = TokenBucket(r, 1+int(ns>>(26+2*i))&3)
			default:
				l = LeakyBucket(r, LeakyOptions{Queue: int(ns>>(26+2*i)) & 3, Slack: int(pers>>(30-i)) & 1})
			}
			if l.Err() != nil {
				return // a GCRA span beyond what it accepts: not a composite matter
			}
			switch a := l.alg.(type) {
			case *bucketAlg:
				gcras = append(gcras, a.gcra)
			case *leakyAlg:
				gcras = append(gcras, a.gcra)
			}
			parts = append(parts, checked(l.alg, &partErr))
			scale.N = min(scale.N, l.alg.maxN())
			scale.Per = max(scale.Per, r.Per)
		}
		windows := allPromises(promises...)
		check := func(books []winBooking, t int64) error {
			if partErr != nil {
				return partErr
			}
			return windows(books, t)
		}
		alg := newComposite(parts)
		d := newWinDriver(alg, check, 1+int64(scale.Per)/3)
		winFuzzOps(t, d, scale, ops)
		var live []gcraBooking
		for _, b := range d.standing() {
			live = append(live, gcraBooking{at: b.at, n: b.n, live: true})
		}
		for _, g := range gcras {
			if msg := gcraPromise(live, g.c, g.i); msg != "" {
				t.Fatalf("%v: %s", alg, msg)
			}
		}
	})
}
