package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
