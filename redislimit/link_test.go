package redislimit

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
)

// TestLinkOneLateReplyKeepsItUp: one round trip that Redis answered too
// late (its connection thrown away) readies a new connection but leaves
// the link up, so the decisions after it go on at once; a second in a
// row takes it down until a warm-up succeeds. Without the rule, one late
// reply of a Redis a few milliseconds inside Timeout refused the next
// decisions for a whole warm-up.
func TestLinkOneLateReplyKeepsItUp(t *testing.T) {
	_, rdb := startRedis(t)
	stop := make(chan struct{})
	var k link
	k.init(context.Background(), rdb, 50*time.Millisecond, stop, cancelScript)
	t.Cleanup(func() { close(stop); k.close() })
	_, err := k.ready(context.Background())
	require.NoError(t, err, "the first warm-up")

	late := context.DeadlineExceeded
	k.enter()
	k.exit(context.Background(), late)
	assert.True(t, k.st.Load().up, "one late reply: the link stays up")
	k.enter()
	k.exit(context.Background(), nil)
	k.enter()
	k.exit(context.Background(), late)
	assert.True(t, k.st.Load().up, "a success between two late replies: still up")
	k.enter()
	k.exit(context.Background(), late)
	// Two in a row: down, unless the warm-up already brought it back.
	_, err = k.ready(context.Background())
	require.NoError(t, err, "Redis answers: the warm-up brings the link up")
	assert.EqualValues(t, 2, k.fails.Load(), "two failures in a row were counted")
}

// TestLinkNeverUpWaitsTimeout: a Limiter that has never reached Redis
// waits out its first warm-up once; the decisions after it fail as with a
// link that went down, each within about Timeout, not 8 × Timeout each
// (400 ms a decision before, a new user's trial). Redis is a unix socket
// that does not exist, and a loopback server that accepts and never
// answers. The bound is generous for a loaded machine: 4 × Timeout.
func TestLinkNeverUpWaitsTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	for _, tt := range []struct{ name, network, addr string }{
		{"missing socket", "unix", filepath.Join(t.TempDir(), "none.sock")},
		{"silent server", "tcp", silentServer(t)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Network: tt.network, Addr: tt.addr, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = rdb.Close() })
			l, err := New(rdb, pace.SlidingLog(pace.PerSecond(1000)), Options{Timeout: timeout})
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			var took []time.Duration
			for i := range 6 {
				t0 := time.Now()
				_, err := l.Wait(context.Background(), "k", 0)
				took = append(took, time.Since(t0).Round(time.Millisecond))
				require.ErrorIs(t, err, ErrUnavailable, "decision %d", i+1)
			}
			t.Logf("decisions took %v", took)
			assert.LessOrEqual(t, took[0], warmTimes*timeout+4*timeout, "the first waits for the first warm-up at most")
			for i, d := range took[1:] {
				assert.LessOrEqual(t, d, 4*timeout, "decision %d: the Timeout of a link that is down", i+2)
			}
		})
	}
}
