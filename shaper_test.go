package pace

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mustShaper returns a Shaper of l or fails the test.
func mustShaper(t testing.TB, l Limit) *Shaper {
	t.Helper()
	s, err := NewShaper(l)
	if err != nil {
		t.Fatalf("NewShaper(%v): %v", l, err)
	}
	return s
}

// tokensAt returns the tokens of a token bucket or pacer Shaper at now:
// C − (TAT−now)/i, negative when units are booked ahead of now.
func tokensAt(s *Shaper, now time.Time) float64 {
	at := sinceEpoch(s.epoch, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	g, c := s.g, s.c
	if c.a <= at {
		return float64(g.c)
	}
	return float64(g.tau-(c.a-at)) / float64(g.i) // one rounding: exact integers first
}

// TestNewShaperErrors: a Limit's own error comes back as it is, and the zero
// Limit is refused, naming "Limit"; neither returns a Shaper.
func TestNewShaperErrors(t *testing.T) {
	bad := TokenBucket(PerSecond(1), 0)
	s, err := NewShaper(bad)
	assert.Nil(t, s)
	require.ErrorIs(t, err, ErrInvalidConfig)
	assert.Equal(t, bad.Err(), err)

	s, err = NewShaper(Limit{})
	assert.Nil(t, s)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Limit", ce.Field)
}

// TestShaperEveryAlgorithm: one Shaper type drives every algorithm through
// the same explicit-time methods: QuotaAt agrees with AllowAt, and a
// cancelled reservation gives its units back.
func TestShaperEveryAlgorithm(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	for _, l := range []Limit{
		TokenBucket(PerSecond(3), 3),
		LeakyBucket(PerSecond(3), LeakyOptions{Queue: 10, Slack: 2}),
		FixedWindow(PerSecond(3)),
		SlidingLog(PerSecond(3)),
		SlidingCounter(PerSecond(3)),
		All(TokenBucket(PerSecond(3), 3), SlidingLog(PerMinute(100))),
	} {
		t.Run(l.String(), func(t *testing.T) {
			s := mustShaper(t, l)
			assert.Equal(t, l.String(), s.String())
			q := s.QuotaAt(t0)
			assert.Equal(t, 3, q.Remaining, "fresh quota")
			for i := range 3 {
				require.True(t, s.AllowAt(t0, 1), "unit %d", i+1)
			}
			assert.False(t, s.AllowAt(t0, 1), "a fourth unit at once")
			q = s.QuotaAt(t0)
			assert.Zero(t, q.Remaining)
			assert.Positive(t, q.Wait)
			r, err := s.ReserveAt(t0, 1, 0)
			require.NoError(t, err)
			assert.Equal(t, q.Wait, r.Delay, "the reservation waits what the quota said")
			s.CancelAt(t0, r)
			assert.Equal(t, q, s.QuotaAt(t0), "cancelling gives the unit back")
		})
	}
}

// TestShaperWait: Wait books a unit through the clock, and fails at once
// with a *WaitError when the context has ended.
func TestShaperWait(t *testing.T) {
	s := mustShaper(t, TokenBucket(PerSecond(1), 1))
	require.NoError(t, s.Wait(context.Background(), 0))
	assert.False(t, s.Allow(), "the only token is taken")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Wait(ctx, 0)
	var we *WaitError
	require.ErrorAs(t, err, &we)
	assert.True(t, errors.Is(err, context.Canceled))
}

// TestMaxWaitOneMeaning: maxWait means the same in Shaper's and Keyed's
// Wait and ReserveAt: a wait beyond a positive maxWait is refused with
// ErrWaitTooLong and books nothing, zero sets no bound, and a negative
// maxWait is refused as invalid (Keyed.ReserveAt took it for no bound,
// Shaper took no maxWait).
func TestMaxWaitOneMeaning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustShaper(t, TokenBucket(PerSecond(1), 1))
		k, err := NewKeyed(TokenBucket(PerSecond(1), 1), KeyedOptions{})
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, s.Wait(ctx, 0))
		_, err = k.Wait(ctx, "k", 0)
		require.NoError(t, err)
		now := time.Now()

		var we *WaitError
		require.ErrorAs(t, s.Wait(ctx, 500*time.Millisecond), &we)
		assert.ErrorIs(t, we, ErrWaitTooLong)
		assert.Equal(t, time.Second, we.Delay)
		_, err = k.Wait(ctx, "k", 500*time.Millisecond)
		assert.ErrorIs(t, err, ErrWaitTooLong)

		r, err := s.ReserveAt(now, 1, 500*time.Millisecond)
		assert.ErrorIs(t, err, ErrWaitTooLong)
		assert.Equal(t, time.Second, r.Delay)
		r, err = k.ReserveAt(now, "k", 1, 500*time.Millisecond)
		assert.ErrorIs(t, err, ErrWaitTooLong)
		assert.Equal(t, time.Second, r.Delay)

		assert.ErrorIs(t, s.Wait(ctx, -1), ErrInvalidConfig)
		_, err = k.Wait(ctx, "k", -1)
		assert.ErrorIs(t, err, ErrInvalidConfig)
		_, err = s.ReserveAt(now, 1, -1)
		assert.ErrorIs(t, err, ErrInvalidConfig)
		_, err = k.ReserveAt(now, "k", 1, -1)
		assert.ErrorIs(t, err, ErrInvalidConfig)

		r, err = s.ReserveAt(now, 1, 0)
		require.NoError(t, err, "zero sets no bound; the refusals booked nothing")
		assert.Equal(t, time.Second, r.Delay)
		r, err = k.ReserveAt(now, "k", 1, 0)
		require.NoError(t, err)
		assert.Equal(t, time.Second, r.Delay)
	})
}

// TestShaperAllowConcurrent: a sliding-log Shaper's Allow from many
// goroutines never refuses
// while the limit has room, whatever order their clock readings reach the
// lock in.
func TestShaperAllowConcurrent(t *testing.T) {
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

// TestShaperKeyedVocabulary: a method Shaper and Keyed share takes the same
// parameters in the same order, Keyed's with the key after the first (a
// time or a context) unless it applies to every key (SetLimitAt, String;
// Allow's key is its only parameter),
// and returns the same, but for Wait, whose Keyed form returns the
// throttle.Permit of the SPI.
func TestShaperKeyedVocabulary(t *testing.T) {
	st, kt := reflect.TypeFor[*Shaper](), reflect.TypeFor[*Keyed]()
	shared := 0
	for i := range st.NumMethod() {
		sm := st.Method(i)
		km, ok := kt.MethodByName(sm.Name)
		if !ok {
			continue
		}
		shared++
		in := func(m reflect.Method) []reflect.Type {
			var ts []reflect.Type
			for j := 1; j < m.Type.NumIn(); j++ { // after the receiver
				ts = append(ts, m.Type.In(j))
			}
			return ts
		}
		out := func(m reflect.Method) []reflect.Type {
			var ts []reflect.Type
			for j := range m.Type.NumOut() {
				ts = append(ts, m.Type.Out(j))
			}
			return ts
		}
		want := in(sm)
		if len(in(km)) == len(want)+1 {
			at := min(1, len(want)) // Allow() has no time: the key comes first
			want = append(want[:at:at], append([]reflect.Type{reflect.TypeFor[string]()}, want[at:]...)...)
		}
		assert.Equal(t, want, in(km), "%s's parameters", sm.Name)
		if sm.Name != "Wait" {
			assert.Equal(t, out(sm), out(km), "%s's results", sm.Name)
		}
	}
	assert.GreaterOrEqual(t, shared, 8, "ReserveAt, AllowAt, Allow, CancelAt, QuotaAt, SetLimitAt, String, Wait")
}
