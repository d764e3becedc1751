package pace

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace/throttle"
)

// TestDepartInTheFuture: a Depart told of an instant still to come (a
// caller's bug) counts as now, so the key's next slot is an interval away,
// not an interval past that instant.
func TestDepartInTheFuture(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, err := NewKeyed(TokenBucket(PerSecond(10), 1), KeyedOptions{})
		require.NoError(t, err)
		p, err := k.Wait(context.Background(), "k", 0)
		require.NoError(t, err)
		require.True(t, p.Track, "a paced request is tracked")
		k.Depart(p, time.Now().Add(time.Hour))
		k.Settle(p, throttle.Outcome{Sent: true, Response: true})
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = k.Wait(ctx, "k", 0)
		require.NoError(t, err)
		assert.LessOrEqual(t, time.Since(start), 200*time.Millisecond)
	})
}
