package wake

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSleep: the timer, a closed wake channel and the context's end each
// end the wait, the last with ctx.Err(), at the instant each says.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		assert.NoError(t, Sleep(context.Background(), time.Second, nil))
		assert.Equal(t, time.Second, time.Since(start), "the timer")

		ch := make(chan struct{})
		time.AfterFunc(200*time.Millisecond, func() { close(ch) })
		start = time.Now()
		assert.NoError(t, Sleep(context.Background(), time.Hour, ch))
		assert.Equal(t, 200*time.Millisecond, time.Since(start), "the wake channel")

		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start = time.Now()
		assert.ErrorIs(t, Sleep(ctx, time.Hour, nil), context.DeadlineExceeded)
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "the deadline")

		ctx, cancel = context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, Sleep(ctx, time.Hour, nil), context.Canceled)
	})
}
