package redislimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeadlinesShareAnEpoch: round trips on a context that cannot be
// cancelled share one deadline while it is at least the timeout less the
// slack away, each given between timeout − slack and timeout; Done closes
// at the deadline, and Err then says so.
func TestDeadlinesShareAnEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d deadlines
		d.init(50 * time.Millisecond)
		require.Equal(t, time.Millisecond, d.slack)

		type key struct{}
		parent := context.WithValue(context.Background(), key{}, "v")
		start := time.Now()
		ctx1, cancel1 := d.bound(parent)
		defer cancel1()
		dl1, ok := ctx1.Deadline()
		require.True(t, ok)
		assert.Equal(t, start.Add(50*time.Millisecond), dl1)
		assert.Equal(t, "v", ctx1.Value(key{}), "values are the parent's")

		time.Sleep(time.Millisecond) // the epoch is exactly timeout − slack away: shared
		ctx2, cancel2 := d.bound(parent)
		defer cancel2()
		dl2, _ := ctx2.Deadline()
		assert.Equal(t, dl1, dl2)

		time.Sleep(time.Microsecond) // less than timeout − slack away: a new epoch
		ctx3, cancel3 := d.bound(parent)
		defer cancel3()
		dl3, _ := ctx3.Deadline()
		assert.Equal(t, time.Now().Add(50*time.Millisecond), dl3)

		assert.NoError(t, ctx1.Err())
		<-ctx1.Done()
		assert.Equal(t, dl1, time.Now(), "Done closes at the deadline")
		assert.ErrorIs(t, ctx1.Err(), context.DeadlineExceeded)
		assert.ErrorIs(t, ctx2.Err(), context.DeadlineExceeded)
		assert.NoError(t, ctx3.Err())
		<-ctx3.Done()
	})
}

// TestDeadlinesCancellableParent: a context that can be cancelled gets a
// deadline of exactly the timeout, and its cancellation ends the round trip's
// context at once.
func TestDeadlinesCancellableParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d deadlines
		d.init(50 * time.Millisecond)
		parent, cancel := context.WithCancel(context.Background())
		ctx, release := d.bound(parent)
		defer release()
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		assert.Equal(t, time.Now().Add(50*time.Millisecond), dl)
		cancel()
		<-ctx.Done()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)

		// A parent deadline sooner than the timeout stays the bound.
		parent2, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel2()
		ctx2, release2 := d.bound(parent2)
		defer release2()
		dl2, _ := ctx2.Deadline()
		assert.Equal(t, time.Now().Add(10*time.Millisecond), dl2)
	})
}
