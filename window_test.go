package pace

import (
	"errors"
	"math"
	"testing"
	"time"
)

// winBase is a whole hour of wall-clock time, so that windows of every period
// dividing 24h start on multiples of the period after it.
var winBase = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// winAt returns winBase + d.
func winAt(d time.Duration) time.Time { return winBase.Add(d) }

// winLimiter is the explicit-time API of a Shaper.
type winLimiter interface {
	ReserveAt(now time.Time, n int, maxWait time.Duration) (Reservation, error)
	AllowAt(now time.Time, n int) bool
	CancelAt(now time.Time, r Reservation)
	String() string
}

var _ winLimiter = (*Shaper)(nil)

// winAllow is one AllowAt call at winBase+at and its expected answer.
type winAllow struct {
	at time.Duration
	n  int
	ok bool
}

func runWinAllow(t *testing.T, l winLimiter, steps []winAllow) {
	t.Helper()
	for i, s := range steps {
		if got := l.AllowAt(winAt(s.at), s.n); got != s.ok {
			t.Errorf("step %d: %v AllowAt(+%v, %d) = %v, want %v", i, l, s.at, s.n, got, s.ok)
		}
	}
}

// winReserve is one ReserveAt call at winBase+at and its expected result.
type winReserve struct {
	at    time.Duration
	n     int
	delay time.Duration
	err   error
}

func runWinReserve(t *testing.T, l winLimiter, steps []winReserve) []Reservation {
	t.Helper()
	var rs []Reservation
	for i, s := range steps {
		r, err := l.ReserveAt(winAt(s.at), s.n, 0)
		if !errors.Is(err, s.err) || (err == nil && r.Delay != s.delay) {
			t.Errorf("step %d: %v ReserveAt(+%v, %d) = %v, %v; want %v, %v", i, l, s.at, s.n, r.Delay, err, s.delay, s.err)
		}
		rs = append(rs, r)
	}
	return rs
}

// mustWindow builds the exported limiter of kind for r.
func mustWindow(t *testing.T, kind string, r Rate) winLimiter {
	t.Helper()
	var (
		l   winLimiter
		err error
	)
	switch kind {
	case "fixed":
		l, err = NewShaper(FixedWindow(r))
	case "sliding log":
		l, err = NewShaper(SlidingLog(r))
	case "sliding counter":
		l, err = NewShaper(SlidingCounter(r))
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	if err != nil {
		t.Fatalf("new %s(%v): %v", kind, r, err)
	}
	return l
}

func TestWindowBadConfig(t *testing.T) {
	tests := []struct {
		name  string
		rate  Rate
		field string
	}{
		{"zero rate", Rate{}, "Rate.N"},
		{"N zero", Rate{N: 0, Per: time.Second}, "Rate.N"},
		{"N negative", Rate{N: -3, Per: time.Second}, "Rate.N"},
		{"Per zero", Rate{N: 1, Per: 0}, "Rate.Per"},
		{"Per negative", Rate{N: 1, Per: -time.Second}, "Rate.Per"},
		{"both bad", Rate{N: -1, Per: -1}, "Rate.N"},
	}
	ctors := []struct {
		name string
		new  func(Rate) (any, error)
	}{
		{"FixedWindow", func(r Rate) (any, error) { return nil, FixedWindow(r).Err() }},
		{"SlidingLog", func(r Rate) (any, error) { return nil, SlidingLog(r).Err() }},
		{"SlidingCounter", func(r Rate) (any, error) { return nil, SlidingCounter(r).Err() }},
		{"NewShaper(FixedWindow)", func(r Rate) (any, error) { l, err := NewShaper(FixedWindow(r)); return l, err }},
		{"NewShaper(SlidingLog)", func(r Rate) (any, error) { l, err := NewShaper(SlidingLog(r)); return l, err }},
		{"NewShaper(SlidingCounter)", func(r Rate) (any, error) { l, err := NewShaper(SlidingCounter(r)); return l, err }},
		{"All", func(r Rate) (any, error) { return nil, All(SlidingLog(PerSecond(1)), FixedWindow(r)).Err() }},
		{"NewShaper(All)", func(r Rate) (any, error) { l, err := NewShaper(All(FixedWindow(r))); return l, err }},
	}
	for _, c := range ctors {
		for _, tt := range tests {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				l, err := c.new(tt.rate)
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Field != tt.field {
					t.Fatalf("%s(%+v) error = %v, want a *ConfigError for %s", c.name, tt.rate, err, tt.field)
				}
				if !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("%s(%+v) error %v does not match ErrInvalidConfig", c.name, tt.rate, err)
				}
				switch l := l.(type) {
				case nil:
				case *Shaper:
					if l != nil {
						t.Errorf("%s returned a limiter with an error", c.name)
					}
				}
			})
		}
	}
}

// TestWindowBadCount: n <= 0 and n > N are refused by every window kind,
// with the right error, booking nothing.
func TestWindowBadCount(t *testing.T) {
	for _, k := range windowKinds {
		t.Run(k.name, func(t *testing.T) {
			l := mustWindow(t, k.name, PerSecond(3))
			runWinReserve(t, l, []winReserve{
				{0, 0, 0, ErrBadCount},
				{0, -1, 0, ErrBadCount},
				{0, math.MinInt, 0, ErrBadCount},
				{0, 4, 0, ErrBurstExceeded},
				{0, math.MaxInt, 0, ErrBurstExceeded},
			})
			runWinAllow(t, l, []winAllow{
				{0, 0, false}, {0, -1, false}, {0, 4, false},
				// Nothing was booked by the refusals: all 3 units are there.
				{0, 3, true}, {0, 1, false},
			})
		})
	}
}

// TestWindowOverflow: at the longest period a Rate may have (maxPer), a
// window that would end past int64 time refuses with ErrWaitTooLong instead
// of wrapping to a negative delay.
func TestWindowOverflow(t *testing.T) {
	for _, k := range windowKinds {
		t.Run(k.name, func(t *testing.T) {
			l := mustWindow(t, k.name, Rate{N: 1, Per: maxPer})
			if !l.AllowAt(winAt(0), 1) {
				t.Fatalf("first AllowAt refused")
			}
			refused := false
			for i := range 4 {
				r, err := l.ReserveAt(winAt(time.Second), 1, 0)
				switch {
				case r.Delay < 0:
					t.Errorf("ReserveAt %d: negative delay %v", i, r.Delay)
				case err == nil && refused:
					t.Errorf("ReserveAt %d = %v, winBooking after a refusal", i, r.Delay)
				case err == nil:
				case !errors.Is(err, ErrWaitTooLong):
					t.Errorf("ReserveAt %d error = %v, want ErrWaitTooLong", i, err)
				default:
					refused = true
				}
			}
			if !refused {
				t.Errorf("no ReserveAt was refused with ErrWaitTooLong")
			}
		})
	}
}

// TestWindowClockBackwards: a clock stepping back mints nothing: after the
// limit is used up at 10 s, calls at earlier instants are refused, and a
// reservation from the past waits for a real opening.
func TestWindowClockBackwards(t *testing.T) {
	for _, k := range windowKinds {
		t.Run(k.name, func(t *testing.T) {
			l := mustWindow(t, k.name, PerSecond(2))
			runWinAllow(t, l, []winAllow{
				{10 * time.Second, 2, true},
				{9 * time.Second, 1, false},
				{time.Second, 1, false},
				{-time.Hour, 1, false},
			})
			r, err := l.ReserveAt(winAt(5*time.Second), 1, 0)
			if err != nil || r.Delay <= 5*time.Second {
				t.Errorf("ReserveAt(+5s) after a full window at +10s = %v, %v; want a delay past +10s", r.Delay, err)
			}
		})
	}
}

func TestWindowString(t *testing.T) {
	tests := []struct {
		l    Limit
		want string
	}{
		{FixedWindow(PerMinute(60)), "fixed window 60/1m0s"},
		{SlidingLog(PerSecond(5)), "sliding log 5/1s"},
		{SlidingCounter(PerHour(100)), "sliding counter 100/1h0m0s"},
		{All(SlidingLog(PerSecond(10)), FixedWindow(PerMinute(500))), "all of (sliding log 10/1s; fixed window 500/1m0s)"},
		{FixedWindow(Rate{}), "invalid limit: pace: invalid Rate.N 0: must be positive"},
	}
	for _, tt := range tests {
		if got := tt.l.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	l, err := NewShaper(SlidingLog(PerSecond(5)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.String(), "sliding log 5/1s"; got != want {
		t.Errorf("SlidingLog.String() = %q, want %q", got, want)
	}
}
