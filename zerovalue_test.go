package pace

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/throttle"
)

// TestNilTransport: a nil *Transport is refused with a *ConfigError
// naming "Transport", never a panic (Validate panicked), and RoundTrip
// closes the body it was handed.
func TestNilTransport(t *testing.T) {
	var tr *Transport
	var ce *ConfigError
	require.NotPanics(t, func() { require.ErrorAs(t, tr.Validate(), &ce) })
	assert.Equal(t, "Transport", ce.Field)
	assert.ErrorIs(t, tr.Validate(), ErrInvalidConfig)

	body := testhttp.NewBody("x")
	req, err := http.NewRequest(http.MethodPut, "http://api.test/", body)
	require.NoError(t, err)
	require.NotPanics(t, func() {
		resp, err := tr.RoundTrip(req)
		assert.Nil(t, resp)
		assert.ErrorIs(t, err, ErrInvalidConfig)
		assert.ErrorIs(t, tr.SetLimit("*", TokenBucket(PerSecond(1), 1)), ErrInvalidConfig)
		assert.Nil(t, tr.Stats())
		tr.CloseIdleConnections()
	})
	assert.True(t, body.Closed())
}

// TestZeroKeyedShaper: every method of a zero or nil Keyed or Shaper
// panics with a message that names the constructor, instead of
// "maphash: use of uninitialized Seed" or a nil dereference.
func TestZeroKeyedShaper(t *testing.T) {
	now := time.Now()
	ctx := context.Background()
	keyed := map[string]func(k *Keyed){
		"String":     func(k *Keyed) { _ = k.String() },
		"ReserveAt":  func(k *Keyed) { _, _ = k.ReserveAt(now, "x", 1, 0) },
		"AllowAt":    func(k *Keyed) { k.AllowAt(now, "x", 1) },
		"Allow":      func(k *Keyed) { k.Allow("x") },
		"CancelAt":   func(k *Keyed) { k.CancelAt(now, "x", Reservation{}) },
		"PauseUntil": func(k *Keyed) { k.PauseUntil("x", now) },
		"PausedUntil": func(k *Keyed) {
			k.PausedUntil("x")
		},
		"Len":        func(k *Keyed) { k.Len() },
		"Wait":       func(k *Keyed) { _, _ = k.Wait(ctx, "x", 0) },
		"Depart":     func(k *Keyed) { k.Depart(throttle.Permit{}, now) },
		"Settle":     func(k *Keyed) { k.Settle(throttle.Permit{}, throttle.Outcome{}) },
		"QuotaAt":    func(k *Keyed) { k.QuotaAt(now, "x") },
		"AdmitAt":    func(k *Keyed) { k.AdmitAt(now, "x", 1) },
		"SetLimitAt": func(k *Keyed) { _ = k.SetLimitAt(now, TokenBucket(PerSecond(1), 1)) },
	}
	for name, call := range keyed {
		assert.PanicsWithValue(t, "pace: Keyed used without NewKeyed", func() { call(new(Keyed)) }, "zero Keyed: %s", name)
		assert.PanicsWithValue(t, "pace: Keyed used without NewKeyed", func() { call(nil) }, "nil *Keyed: %s", name)
	}
	shaper := map[string]func(s *Shaper){
		"String":     func(s *Shaper) { _ = s.String() },
		"ReserveAt":  func(s *Shaper) { _, _ = s.ReserveAt(now, 1, 0) },
		"AllowAt":    func(s *Shaper) { s.AllowAt(now, 1) },
		"Allow":      func(s *Shaper) { s.Allow() },
		"CancelAt":   func(s *Shaper) { s.CancelAt(now, Reservation{}) },
		"QuotaAt":    func(s *Shaper) { s.QuotaAt(now) },
		"Wait":       func(s *Shaper) { _ = s.Wait(ctx, 0) },
		"SetLimitAt": func(s *Shaper) { _ = s.SetLimitAt(now, TokenBucket(PerSecond(1), 1)) },
	}
	for name, call := range shaper {
		assert.PanicsWithValue(t, "pace: Shaper used without NewShaper", func() { call(new(Shaper)) }, "zero Shaper: %s", name)
		assert.PanicsWithValue(t, "pace: Shaper used without NewShaper", func() { call(nil) }, "nil *Shaper: %s", name)
	}
	// Made by their constructors, they work.
	k, err := NewKeyed(TokenBucket(PerSecond(1), 1), KeyedOptions{})
	require.NoError(t, err)
	s, err := NewShaper(TokenBucket(PerSecond(1), 1))
	require.NoError(t, err)
	assert.True(t, k.Allow("x"))
	assert.True(t, s.Allow())
}
