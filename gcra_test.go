package pace

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// gcraT0 is the origin of the explicit-time tests; limiters created now have
// their epoch decades earlier, so every instant these tests use is inside
// their range.
var gcraT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// gcraAt returns the instant d after gcraT0.
func gcraAt(d time.Duration) time.Time { return gcraT0.Add(d) }

// gcraCell returns a copy of l's state.
func gcraCell(l *Shaper) cell {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c
}

// gcraBooking is units booked at an instant, in nanoseconds after gcraT0.
type gcraBooking struct {
	at   int64
	n    int
	r    Reservation
	live bool // false once cancelled
}

// gcraPromise checks the GCRA promise on the live bookings: every closed
// interval [x, y] holds at most capacity + ⌊(y−x)/interval⌋ units. It checks
// every pair of booked instants and returns a description of the first
// violation, or "".
func gcraPromise(bs []gcraBooking, capacity, interval int64) string {
	var live []gcraBooking
	for _, b := range bs {
		if b.live {
			live = append(live, b)
		}
	}
	slices.SortFunc(live, func(x, y gcraBooking) int { return cmp.Compare(x.at, y.at) })
	for i := range live {
		var units int64
		for j := i; j < len(live); j++ {
			units += int64(live[j].n)
			span := uint64(live[j].at - live[i].at) // sorted, so exact even near the int64 limits
			if allowed := uint64(capacity) + span/uint64(interval); uint64(units) > allowed {
				return fmt.Sprintf("%d units booked in [%d, %d] ns, want at most %d (capacity %d, interval %d ns)",
					units, live[i].at, live[j].at, allowed, capacity, interval)
			}
		}
	}
	return ""
}

// gcraOp is one step of a random schedule.
type gcraOp struct {
	kind byte   // one of the gcraOpXxx constants, modulo gcraOpKinds
	arg  uint64 // size of a time step, n, or which reservation to cancel
}

const (
	gcraOpForward = iota // now += arg mod 3 intervals
	gcraOpBack           // now −= arg mod 2 intervals: a clock stepping back
	gcraOpAllow          // AllowAt(now, n)
	gcraOpReserve        // ReserveAt(now, n)
	gcraOpCancel         // CancelAt(now, one of the live reservations)
	gcraOpJump           // jump past every booking: the limiter must be full again
	gcraOpKinds
)

// gcraSpec is what a schedule needs to know about the limiter under test,
// derived from its configuration independently of the implementation.
type gcraSpec struct {
	capacity int64 // units that may pass at one instant: burst, or slack+1
	interval int64 // Rate.Per/Rate.N rounded up, in nanoseconds
	wait     int64 // longest delay ReserveAt may grant; math.MaxInt64 if unbounded
}

// gcraRange bounds how far schedules move from gcraT0, so that every instant
// lies inside the limiter's range and none is clamped.
const gcraRange = int64(50 * 365 * 24 * time.Hour)

// exerciseGCRA runs ops against l and checks, after every step, that refusals
// book nothing and delays are never negative nor beyond the queue, and at the
// end that the live bookings keep the promise. It returns the first problem
// found, or nil.
func exerciseGCRA(l *Shaper, spec gcraSpec, ops []gcraOp) error {
	var (
		now       int64
		bookings  []gcraBooking
		latestEnd int64 // latest instant any booking was made at, ever
	)
	book := func(at int64, n int, r Reservation) {
		bookings = append(bookings, gcraBooking{at: at, n: n, r: r, live: true})
		latestEnd = max(latestEnd, at)
	}
	for k, o := range ops {
		before := gcraCell(l)
		nowT := gcraT0.Add(time.Duration(now))
		n := 1 + int(o.arg%uint64(spec.capacity+1)) // sometimes one more than allowed
		switch o.kind % gcraOpKinds {
		case gcraOpForward:
			if d := gcraStep(o.arg, 3, spec.interval); now+d < gcraRange {
				now += d
			}
		case gcraOpBack:
			if d := gcraStep(o.arg, 2, spec.interval); now-d > -gcraRange {
				now -= d
			}
		case gcraOpJump:
			next, ok := addCheck(max(now, latestEnd), spec.capacity*spec.interval+int64(o.arg%1000))
			if !ok || next >= gcraRange {
				continue
			}
			now = next
			if !l.AllowAt(gcraT0.Add(time.Duration(now)), int(spec.capacity)) {
				return fmt.Errorf("step %d: AllowAt(%d, %d) after every booking drained = false, want true", k, now, spec.capacity)
			}
			book(now, int(spec.capacity), Reservation{})
		case gcraOpAllow:
			ok := l.AllowAt(nowT, n)
			switch {
			case ok && int64(n) > spec.capacity:
				return fmt.Errorf("step %d: AllowAt(%d, %d) = true above capacity %d", k, now, n, spec.capacity)
			case ok:
				book(now, n, Reservation{})
			case gcraCell(l) != before:
				return fmt.Errorf("step %d: AllowAt(%d, %d) refused but changed the state", k, now, n)
			}
		case gcraOpReserve:
			r, err := l.ReserveAt(nowT, n, 0)
			if err != nil {
				if after := gcraCell(l); after != before {
					return fmt.Errorf("step %d: ReserveAt(%d, %d) = %v but changed the state", k, now, n, err)
				}
			}
			switch {
			case r.Delay < 0:
				return fmt.Errorf("step %d: ReserveAt(%d, %d) delay %v < 0", k, now, n, r.Delay)
			case int64(n) > spec.capacity:
				if !errors.Is(err, ErrBurstExceeded) {
					return fmt.Errorf("step %d: ReserveAt(%d, %d) = %v, want ErrBurstExceeded", k, now, n, err)
				}
			case errors.Is(err, ErrQueueFull):
				if int64(r.Delay) <= spec.wait {
					return fmt.Errorf("step %d: ReserveAt(%d, %d) queue full with delay %v within the bound %v", k, now, n, r.Delay, time.Duration(spec.wait))
				}
			case errors.Is(err, ErrWaitTooLong):
				// Refused: booking would overflow. Nothing to check beyond the state.
			case err != nil:
				return fmt.Errorf("step %d: ReserveAt(%d, %d) unexpected error %v", k, now, n, err)
			case int64(r.Delay) > spec.wait:
				return fmt.Errorf("step %d: ReserveAt(%d, %d) delay %v beyond the queue bound %v", k, now, n, r.Delay, time.Duration(spec.wait))
			default:
				book(now+int64(r.Delay), n, r)
			}
		case gcraOpCancel:
			var live []int
			for i, b := range bookings {
				if b.live && b.r.n > 0 {
					live = append(live, i)
				}
			}
			if len(live) == 0 {
				continue
			}
			i := live[o.arg%uint64(len(live))]
			l.CancelAt(nowT, bookings[i].r)
			bookings[i].live = false
		}
	}
	if msg := gcraPromise(bookings, spec.capacity, spec.interval); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// gcraStep returns a time step of 0 to k intervals chosen by arg, at most
// gcraRange, so that stepping never overflows.
func gcraStep(arg uint64, k, interval int64) int64 {
	limit := gcraRange
	if interval <= gcraRange/k {
		limit = k * interval
	}
	return int64(arg % uint64(limit+1))
}

// randomGCRAOps returns a short random schedule.
func randomGCRAOps(rng *rand.Rand, steps int) []gcraOp {
	ops := make([]gcraOp, steps)
	for i := range ops {
		k := rng.IntN(20)
		switch {
		case k < 5:
			ops[i].kind = gcraOpForward
		case k < 7:
			ops[i].kind = gcraOpBack
		case k < 11:
			ops[i].kind = gcraOpAllow
		case k < 16:
			ops[i].kind = gcraOpReserve
		case k < 19:
			ops[i].kind = gcraOpCancel
		default:
			ops[i].kind = gcraOpJump
		}
		ops[i].arg = rng.Uint64()
	}
	return ops
}

// decodeGCRAOps turns fuzz bytes into a schedule, two bytes per step.
func decodeGCRAOps(data []byte) []gcraOp {
	ops := make([]gcraOp, 0, len(data)/2)
	for i := 0; i+1 < len(data); i += 2 {
		ops = append(ops, gcraOp{kind: data[i], arg: uint64(data[i+1]) * 0x9E3779B97F4A7C15})
	}
	return ops
}

// gcraBucket returns a token bucket or fails the test.
func gcraBucket(t testing.TB, r Rate, burst int) *Shaper {
	t.Helper()
	b, err := NewShaper(TokenBucket(r, burst))
	if err != nil {
		t.Fatalf("NewShaper(TokenBucket(%v, %d)): %v", r, burst, err)
	}
	return b
}

// gcraLeaky returns a leaky-bucket pacer or fails the test.
func gcraLeaky(t testing.TB, r Rate, o LeakyOptions) *Shaper {
	t.Helper()
	l, err := NewShaper(LeakyBucket(r, o))
	if err != nil {
		t.Fatalf("NewShaper(LeakyBucket(%v, %+v)): %v", r, o, err)
	}
	return l
}

// gcraReserve calls ReserveAt and fails the test on an error.
func gcraReserve(t testing.TB, l *Shaper, now time.Time, n int) Reservation {
	t.Helper()
	r, err := l.ReserveAt(now, n, 0)
	if err != nil {
		t.Fatalf("ReserveAt(%v, %d): %v", now.Sub(gcraT0), n, err)
	}
	return r
}

// gcraIntervals are the intervals random schedules use, in nanoseconds: the
// smallest, odd ones, and real rates (60/s rounds up to 16666667 ns).
var gcraIntervals = []time.Duration{1, 7, time.Millisecond, time.Second / 60, time.Second, time.Hour}

// TestGCRAMatchesLazyRefill checks the documented equivalence: on schedules
// whose time never goes back, the token bucket decides exactly like the
// lazy-refill bucket tokens = min(C, tokens + (now−last)/I), computed here in
// exact integers (tokens scaled by I), and tokensAt reports its tokens.
func TestGCRAMatchesLazyRefill(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		interval := int64(gcraIntervals[rng.IntN(len(gcraIntervals))])
		capacity := int64(1 + rng.IntN(8))
		b := gcraBucket(t, Rate{N: 1, Per: time.Duration(interval)}, int(capacity))
		scaled, last := capacity*interval, int64(0) // reference: tokens·I, full
		now := int64(0)
		for step := range 100 {
			now += rng.Int64N(2*interval + 1)
			if now > last {
				scaled = min(capacity*interval, scaled+(now-last))
				last = now
			}
			n := 1 + rng.IntN(int(capacity))
			want := scaled >= int64(n)*interval
			if want {
				scaled -= int64(n) * interval
			}
			wantTokens := float64(scaled) / float64(interval)
			if got := b.AllowAt(gcraAt(time.Duration(now)), n); got != want {
				t.Fatalf("interval %d capacity %d step %d: AllowAt(%d, %d) = %v, want %v", interval, capacity, step, now, n, got, want)
			}
			if got := tokensAt(b, gcraAt(time.Duration(now))); math.Abs(got-wantTokens) > 1e-9*float64(capacity) {
				t.Fatalf("interval %d capacity %d step %d: tokens(%d) = %v, want %v", interval, capacity, step, now, got, wantTokens)
			}
		}
	}
}

// TestGCRACancelKeepsLaterSpacing shows why cancel gives back only what no
// later booking depends on: with burst 1 at 1/s, slots at T and T+1s are
// booked; cancelling T must not let a new request take T+1s, which the
// second reservation still holds.
func TestGCRACancelKeepsLaterSpacing(t *testing.T) {
	b := gcraBucket(t, PerSecond(1), 1)
	r1 := gcraReserve(t, b, gcraT0, 1)
	r2 := gcraReserve(t, b, gcraT0, 1)
	if r2.Delay != time.Second {
		t.Fatalf("second ReserveAt delay = %v, want 1s", r2.Delay)
	}
	b.CancelAt(gcraT0, r1)
	if r3 := gcraReserve(t, b, gcraT0, 1); r3.Delay != 2*time.Second {
		t.Errorf("ReserveAt after cancelling the first: delay %v, want 2s (1s is still held)", r3.Delay)
	} else {
		b.CancelAt(gcraT0, r3) // the latest: exact
	}
	if r4 := gcraReserve(t, b, gcraT0, 1); r4.Delay != 2*time.Second {
		t.Errorf("ReserveAt after cancelling the latest: delay %v, want 2s", r4.Delay)
	} else {
		b.CancelAt(gcraT0, r4)
	}
	b.CancelAt(gcraT0, r2)
	if !b.AllowAt(gcraAt(time.Second), 1) {
		t.Errorf("AllowAt(1s) after cancelling the later reservations = false, want true")
	}
}

// TestGCRAOverflowRefuses books ahead until the theoretical arrival time
// would pass MaxInt64: ReserveAt must refuse with ErrWaitTooLong, book
// nothing, and never report a negative delay.
func TestGCRAOverflowRefuses(t *testing.T) {
	per := time.Duration(math.MaxInt64 / 4) // about 73 years per token
	tb := gcraBucket(t, Rate{N: 1, Per: per}, 1)
	lb := gcraLeaky(t, Rate{N: 1, Per: per}, LeakyOptions{MaxDelay: math.MaxInt64})
	for name, l := range map[string]*Shaper{"bucket": tb, "leaky": lb} {
		refused := false
		for range 8 {
			before := gcraCell(l)
			r, err := l.ReserveAt(gcraT0, 1, 0)
			if r.Delay < 0 {
				t.Fatalf("%s: ReserveAt delay %v < 0", name, r.Delay)
			}
			if err != nil {
				if !errors.Is(err, ErrWaitTooLong) {
					t.Fatalf("%s: ReserveAt error %v, want ErrWaitTooLong", name, err)
				}
				if gcraCell(l) != before {
					t.Fatalf("%s: refusal changed the state", name)
				}
				refused = true
				break
			}
		}
		if !refused {
			t.Errorf("%s: 73-year slots did not reach the int64 limit within 8 reservations", name)
		}
	}
}

// TestGCRABadConfig: every invalid setting is a *ConfigError naming its
// field, from the Limit and from the constructor.
func TestGCRABadConfig(t *testing.T) {
	huge := Rate{N: 1, Per: math.MaxInt64}
	newTB := func(r Rate, burst int) func() error {
		return func() error { _, err := NewShaper(TokenBucket(r, burst)); return err }
	}
	newLB := func(r Rate, o LeakyOptions) func() error {
		return func() error { _, err := NewShaper(LeakyBucket(r, o)); return err }
	}
	tests := []struct {
		name  string
		limit Limit
		newFn func() error
		field string
	}{
		{"bucket N 0", TokenBucket(Rate{N: 0, Per: time.Second}, 1), newTB(Rate{N: 0, Per: time.Second}, 1), "Rate.N"},
		{"bucket N negative", TokenBucket(Rate{N: -3, Per: time.Second}, 1), newTB(Rate{N: -3, Per: time.Second}, 1), "Rate.N"},
		{"bucket Per 0", TokenBucket(Rate{N: 1}, 1), newTB(Rate{N: 1}, 1), "Rate.Per"},
		{"bucket Per negative", TokenBucket(Rate{N: 1, Per: -time.Second}, 1), newTB(Rate{N: 1, Per: -time.Second}, 1), "Rate.Per"},
		{"bucket burst 0", TokenBucket(PerSecond(2), 0), newTB(PerSecond(2), 0), "Burst"},
		{"bucket burst negative", TokenBucket(PerSecond(2), -1), newTB(PerSecond(2), -1), "Burst"},
		{"bucket interval over 146 years", TokenBucket(huge, 1), newTB(huge, 1), "Rate.Per"},
		{"bucket burst·interval overflows", TokenBucket(PerSecond(1), math.MaxInt), newTB(PerSecond(1), math.MaxInt), "Burst"},
		{"bucket burst·interval over 146 years", TokenBucket(PerHour(1), 2_000_000), newTB(PerHour(1), 2_000_000), "Burst"},
		{"leaky N 0", LeakyBucket(Rate{Per: time.Second}, LeakyOptions{Queue: 1}), newLB(Rate{Per: time.Second}, LeakyOptions{}), "Rate.N"},
		{"leaky Per 0", LeakyBucket(Rate{N: 1}, LeakyOptions{Queue: 1}), newLB(Rate{N: 1}, LeakyOptions{}), "Rate.Per"},
		{"leaky queue negative", LeakyBucket(PerSecond(10), LeakyOptions{Queue: -1}), newLB(PerSecond(10), LeakyOptions{Queue: -1}), "Queue"},
		{"leaky slack negative", LeakyBucket(PerSecond(10), LeakyOptions{Slack: -1}), newLB(PerSecond(10), LeakyOptions{Slack: -1}), "Slack"},
		{"leaky max delay negative", LeakyBucket(PerSecond(10), LeakyOptions{MaxDelay: -time.Second}), newLB(PerSecond(10), LeakyOptions{MaxDelay: -1}), "MaxDelay"},
		{"leaky slack overflows", LeakyBucket(PerSecond(10), LeakyOptions{Slack: math.MaxInt}), newLB(PerSecond(10), LeakyOptions{Slack: math.MaxInt}), "Slack"},
		{"leaky slack·interval over 146 years", LeakyBucket(PerHour(1), LeakyOptions{Slack: 2_000_000}), newLB(PerHour(1), LeakyOptions{Slack: 2_000_000}), "Slack"},
		{"leaky queue·interval overflows", LeakyBucket(PerSecond(1), LeakyOptions{Queue: math.MaxInt}), newLB(PerSecond(1), LeakyOptions{Queue: math.MaxInt}), "Queue"},
		{"leaky interval over 146 years", LeakyBucket(huge, LeakyOptions{}), newLB(huge, LeakyOptions{}), "Rate.Per"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, err := range []error{tt.limit.Err(), tt.newFn()} {
				var ce *ConfigError
				if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) {
					t.Fatalf("error = %v, want a *ConfigError matching ErrInvalidConfig", err)
				}
				if ce.Field != tt.field {
					t.Errorf("ConfigError.Field = %q, want %q (%v)", ce.Field, tt.field, err)
				}
			}
			if tt.limit.IsZero() {
				t.Errorf("an invalid Limit reads as no limit")
			}
		})
	}
	var ce *ConfigError
	if err := LeakyBucket(PerHour(1), LeakyOptions{Slack: 2_000_000}).Err(); !errors.As(err, &ce) || ce.Value != 2_000_000 {
		t.Errorf("Slack 2000000 at 1/h: error %v, want a *ConfigError with the Slack as given", err)
	}
}

// TestGCRAGoodConfig: the extremes that are still valid build, and describe
// themselves.
func TestGCRAGoodConfig(t *testing.T) {
	tests := []struct {
		limit Limit
		want  string
	}{
		{TokenBucket(PerSecond(10), 20), "token bucket 10/1s burst 20"},
		{TokenBucket(Rate{N: math.MaxInt, Per: time.Nanosecond}, 1), "token bucket 9223372036854775807/1ns burst 1"},
		{LeakyBucket(PerSecond(10), LeakyOptions{Queue: 100}), "leaky bucket 10/1s queue 100"},
		{LeakyBucket(PerMinute(1), LeakyOptions{MaxDelay: time.Hour, Slack: 2}), "leaky bucket 1/1m0s max delay 1h0m0s slack 2"},
	}
	for _, tt := range tests {
		if err := tt.limit.Err(); err != nil {
			t.Errorf("%v: Err() = %v", tt.want, err)
		}
		if got := tt.limit.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	if got, want := gcraBucket(t, PerSecond(10), 20).String(), tests[0].want; got != want {
		t.Errorf("TokenBucket.String() = %q, want %q", got, want)
	}
	if got, want := gcraLeaky(t, PerSecond(10), LeakyOptions{Queue: 100}).String(), tests[2].want; got != want {
		t.Errorf("LeakyBucket.String() = %q, want %q", got, want)
	}
}

// TestGCRABadCount: n <= 0 is ErrBadCount and n above the capacity is
// ErrBurstExceeded, from both types, booking nothing; AllowAt says false.
func TestGCRABadCount(t *testing.T) {
	tb := gcraBucket(t, PerSecond(10), 3)
	lb := gcraLeaky(t, PerSecond(10), LeakyOptions{Queue: 5, Slack: 1})
	tests := []struct {
		name string
		l    *Shaper
		n    int
		want error
	}{
		{"bucket n 0", tb, 0, ErrBadCount},
		{"bucket n -1", tb, -1, ErrBadCount},
		{"bucket n above burst", tb, 4, ErrBurstExceeded},
		{"leaky n 0", lb, 0, ErrBadCount},
		{"leaky n above slack+1", lb, 3, ErrBurstExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := gcraCell(tt.l)
			if _, err := tt.l.ReserveAt(gcraT0, tt.n, 0); !errors.Is(err, tt.want) {
				t.Errorf("ReserveAt(T, %d) error = %v, want %v", tt.n, err, tt.want)
			}
			if tt.l.AllowAt(gcraT0, tt.n) {
				t.Errorf("AllowAt(T, %d) = true, want false", tt.n)
			}
			if gcraCell(tt.l) != before {
				t.Errorf("refusals changed the state")
			}
		})
	}
}

// TestGCRAClockStepsBack: after draining at T, instants before T get
// nothing, for both types, and later ones still refill on time.
func TestGCRAClockStepsBack(t *testing.T) {
	tb := gcraBucket(t, PerSecond(1), 3)
	lb := gcraLeaky(t, PerSecond(1), LeakyOptions{Slack: 2, MaxDelay: 100 * 365 * 24 * time.Hour})
	for name, l := range map[string]*Shaper{"bucket": tb, "leaky": lb} {
		t.Run(name, func(t *testing.T) {
			T := gcraAt(time.Hour)
			for range 3 {
				if !l.AllowAt(T, 1) {
					t.Fatalf("AllowAt(T) while draining = false")
				}
			}
			for _, back := range []time.Duration{time.Nanosecond, time.Second, time.Minute, 10 * 365 * 24 * time.Hour} {
				now := T.Add(-back)
				if l.AllowAt(now, 1) {
					t.Errorf("AllowAt(T−%v) after draining at T = true, want false", back)
				}
				if l.AllowAt(now.Add(-100*365*24*time.Hour), 1) {
					t.Errorf("AllowAt(T−%v−100 years), before the epoch, = true, want false", back)
				}
				r, err := l.ReserveAt(now, 1, 0)
				if err != nil {
					t.Fatalf("ReserveAt(T−%v): %v", back, err)
				}
				if slot := now.Add(r.Delay); slot.Before(T.Add(time.Second)) {
					t.Errorf("ReserveAt(T−%v) slot %v, want no earlier than T+1s", back, slot.Sub(T))
				}
				l.CancelAt(T, r)
			}
			if !l.AllowAt(T.Add(3*time.Second), 1) {
				t.Errorf("AllowAt(T+3s) after the steps back = false, want true")
			}
		})
	}
}

// TestGCRALongUptime: a limiter keeps refilling long after its creation; a
// limiter must not freeze after months (the epoch leaves about 73 years).
func TestGCRALongUptime(t *testing.T) {
	b := gcraBucket(t, PerSecond(1), 1)
	for _, after := range []time.Duration{200 * 24 * time.Hour, 10 * 365 * 24 * time.Hour, 60 * 365 * 24 * time.Hour} {
		now := time.Now().Add(after)
		if !b.AllowAt(now, 1) || b.AllowAt(now, 1) || !b.AllowAt(now.Add(time.Second), 1) {
			t.Errorf("%v after creation: want allow, refuse at the same instant, allow 1s later", after)
		}
	}
}

// TestGCRASpan: the keyed store forgets a cell span after its last use; a
// cell used as much as it can be at T is idle exactly at T+span.
func TestGCRASpan(t *testing.T) {
	tb := gcraBucket(t, PerSecond(4), 5)
	lb := gcraLeaky(t, PerSecond(4), LeakyOptions{Queue: 3, Slack: 1})
	tests := []struct {
		name string
		l    *Shaper
		span time.Duration
		// drained is when a cell filled at T is idle again: span at most
		// (for a pacer, its slots fill the queue bound only to whole intervals)
		drained time.Duration
		fill    func(l *Shaper)
	}{
		{"bucket", tb, 5 * 250 * time.Millisecond, 5 * 250 * time.Millisecond, func(l *Shaper) {
			for l.AllowAt(gcraT0, 1) {
			}
		}},
		// slack+1 intervals, and Queue intervals, each stretched by a late
		// answer's most (quickest.Cap: twice the widest departure margin,
		// a 20th, so 25ms) and a millisecond.
		{"leaky", lb, 2*250*time.Millisecond + 3*(276*time.Millisecond), (2 + 3) * 250 * time.Millisecond, func(l *Shaper) {
			for {
				if _, err := l.ReserveAt(gcraT0, 1, 0); err != nil {
					return
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.l.alg.span(); got != int64(tt.span) {
				t.Fatalf("span() = %v, want %v", time.Duration(got), tt.span)
			}
			tt.fill(tt.l)
			at := func(d time.Duration) int64 { return sinceEpoch(tt.l.epoch, gcraT0.Add(d)) }
			c := gcraCell(tt.l)
			if tt.l.alg.idle(&c, at(tt.drained-1)) {
				t.Errorf("idle 1ns before %v after filling", tt.drained)
			}
			if !tt.l.alg.idle(&c, at(tt.drained)) || !tt.l.alg.idle(&c, at(tt.span)) {
				t.Errorf("not idle at %v (span %v) after filling", tt.drained, tt.span)
			}
		})
	}
}

// gcraFuzzRate decodes a rate from two fuzz bytes, from 1 per nanosecond
// to rates whose interval is over 146 years, with N that does not divide Per.
func gcraFuzzRate(b0, b1 byte) (r Rate, interval int64) {
	pers := []time.Duration{1, 7, time.Millisecond, time.Second, time.Hour, math.MaxInt64 / 4, maxSpan, math.MaxInt64}
	r = Rate{N: 1 + int(b1%4), Per: pers[int(b0)%len(pers)]}
	interval = int64(r.Per) / int64(r.N)
	if int64(r.Per)%int64(r.N) != 0 {
		interval++ // rounded up: never faster than r
	}
	return r, interval
}

// gcraFuzzSize decodes a burst or queue size: small, or now and then huge.
func gcraFuzzSize(b byte) int {
	if b >= 0xF0 {
		return 1 << (b - 0xF0 + 20) // 2^20 .. 2^35
	}
	return int(b % 6)
}

// gcraMaxFuzzOps bounds a fuzz schedule so the all-pairs promise check stays
// fast.
const gcraMaxFuzzOps = 200

// TestGCRAAllow1MatchesGeneric: the fast path Allow uses decides and books
// exactly as earliest+book do, on random schedules with clock steps back and
// saturated instants.
func TestGCRAAllow1MatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 2000 {
		g, err := newGCRA(Rate{N: 1 + rng.IntN(50), Per: time.Duration(1+rng.IntN(5)) * time.Second}, 1+rng.IntN(5), "Burst", 1)
		if err != nil {
			t.Fatal(err)
		}
		var fast, slow cell
		now := int64(1 + rng.IntN(1e9))
		for step := range 50 {
			now = clampNow(now + int64(rng.IntN(int(2*g.i))) - int64(g.i)/2)
			if rng.IntN(100) == 0 {
				now = maxSpan
			}
			gotOK := g.allow1(&fast, now)
			tt, err := g.earliest(&slow, now, 1)
			wantOK := err == nil && tt <= now
			if wantOK {
				g.book(&slow, now, now, 1)
			}
			if gotOK != wantOK || fast != slow {
				t.Fatalf("step %d at %d: allow1 = %v %+v, earliest+book = %v %+v", step, now, gotOK, fast, wantOK, slow)
			}
		}
	}
}
