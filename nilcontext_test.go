package pace

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWaitNilContext: Keyed.Wait and Shaper.Wait refuse a nil Context
// with a *ConfigError inside a *WaitError, as they refuse a negative
// maxWait, instead of panicking; nothing is booked.
func TestWaitNilContext(t *testing.T) {
	k, err := NewKeyed(TokenBucket(PerMinute(1), 1), KeyedOptions{})
	require.NoError(t, err)
	var nilCtx context.Context
	require.NotPanics(t, func() {
		_, err = k.Wait(nilCtx, "k", 0)
	})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "ctx", ce.Field)
	var we *WaitError
	require.ErrorAs(t, err, &we)
	assert.NotErrorIs(t, err, ErrRateLimited, "a caller's bug is no throttle")
	_, err = newKeyedNoLimit(t).Wait(nilCtx, "k", 0)
	require.ErrorAs(t, err, &ce, "a Keyed without a limit too")

	s, err := NewShaper(TokenBucket(PerMinute(1), 1))
	require.NoError(t, err)
	require.NotPanics(t, func() { err = s.Wait(nilCtx, 0) })
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "ctx", ce.Field)
	assert.True(t, k.Allow("k") && s.Allow(), "nothing was booked")
}

// newKeyedNoLimit returns a Keyed of the zero Limit (pauses only).
func newKeyedNoLimit(t *testing.T) *Keyed {
	k, err := NewKeyed(Limit{}, KeyedOptions{})
	require.NoError(t, err)
	return k
}
