package redislimit

import (
	"fmt"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/throttle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseSettleSpentQuota: after an answer saying the quota is spent
// (Remaining 0, Reset 30 s), or a pause of 30 s, the same process's next
// leased Wait does not go out: Settle's reply carries the pause to the
// share at once. Each of ten rounds is a new Limiter on a new Prefix.
func TestLeaseSettleSpentQuota(t *testing.T) {
	_, rdb := startRedis(t)
	for _, o := range []throttle.Outcome{
		{Sent: true, Response: true, Quota: throttle.Quota{Remaining: 0, Reset: 30 * time.Second}},
		{Sent: true, Response: true, Pause: 30 * time.Second},
	} {
		admitted := 0
		for i := range 10 {
			prefix := fmt.Sprintf("spent%d-%v:", i, o.Pause)
			notFresh(t, rdb, prefix, "k")
			lim, err := New(rdb, pace.SlidingLog(pace.PerSecond(50)), Options{Lease: time.Second, Prefix: prefix})
			require.NoError(t, err)
			p, err := lim.Wait(waitCtx(t, time.Second), "k", 0)
			require.NoError(t, err)
			lim.Settle(p, o)
			p, err = lim.Wait(waitCtx(t, time.Second), "k", 0)
			if err == nil {
				admitted++
				lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
			} else {
				assert.ErrorIs(t, err, pace.ErrWaitExceedsDeadline)
			}
			require.NoError(t, lim.Close())
		}
		assert.Zero(t, admitted, "Waits admitted right after %+v", o)
	}
}
