package pace

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeyedFloodOfMadeUpKeys: made-up keys at 10 × MaxKeys (a flood of
// random X-API-Key values, each sent once and admitted) neither lock out a
// legitimate new key, whose first request is admitted with its whole burst
// (no shared overflow limit), nor grow the heap past what MaxKeys keys take:
// the keys past the first MaxKeys cost nothing more.
func TestKeyedFloodOfMadeUpKeys(t *testing.T) {
	const maxKeys, flood = 10_000, 100_000
	lim := TokenBucket(PerMinute(60), 10)
	before := heapInUse()
	k := newTestKeyed(t, lim, KeyedOptions{MaxKeys: maxKeys})
	now := t0
	for i := range maxKeys {
		_, ok := k.AdmitAt(now, "made-up-"+strconv.Itoa(i), 1)
		require.True(t, ok, "made-up key %d", i)
	}
	atCap := heapInUse()
	for i := maxKeys; i < flood; i++ {
		now = now.Add(time.Microsecond) // the flood takes 0.1 s
		_, ok := k.AdmitAt(now, "made-up-"+strconv.Itoa(i), 1)
		require.True(t, ok, "made-up key %d: its own fresh limit", i)
	}
	after := heapInUse()
	assert.LessOrEqual(t, k.Len(), maxKeys+63, "Len after the flood")

	q, ok := k.AdmitAt(now, "legitimate", 1)
	assert.True(t, ok, "the legitimate key's first request")
	assert.Equal(t, 9, q.Remaining, "the legitimate key's own burst, less the one it took")

	atCapGrowth, floodGrowth := int64(atCap)-int64(before), int64(after)-int64(atCap)
	t.Logf("heap: %d B for the first %d keys (%.0f B/key), %+d B for the next %d", atCapGrowth, maxKeys, float64(atCapGrowth)/maxKeys, floodGrowth, flood-maxKeys)
	assert.Less(t, atCapGrowth, int64(8<<20), "heap for MaxKeys keys (generous bound: 8 MiB)")
	assert.Less(t, floodGrowth, int64(1<<20), "heap growth from MaxKeys to 10 × MaxKeys keys (generous bound: 1 MiB)")
	runtime.KeepAlive(k)
}

// TestKeyedEvictsLeastUsed: the key evicted to make room is the one that
// has used the fewest units of its limit now, the nearest to whole again
// first among equals. So flooding made-up keys, each booked once, after
// draining a key never hands that key its limit back while lighter keys
// remain, whatever the algorithm. A sliding log or a window drained first
// is whole again sooner than the made-up keys booked after it: evicting by
// that alone gave an attacker who alternates its key with fresh ones its
// limit back again and again (1,650 requests through in 0.7 s where about
// 85 are allowed, a new user's trial of package middleware).
func TestKeyedEvictsLeastUsed(t *testing.T) {
	const maxKeys = 64 // one shard
	for _, tt := range []struct {
		name string
		lim  Limit
	}{
		{"token bucket", TokenBucket(PerSecond(1), 10)},
		{"leaky bucket", LeakyBucket(PerSecond(10), LeakyOptions{Slack: 9})},
		{"fixed window", FixedWindow(PerSecond(10))},
		{"sliding log", SlidingLog(PerSecond(10))},
		{"sliding counter", SlidingCounter(PerSecond(10))},
		{"all", All(SlidingLog(PerSecond(10)), TokenBucket(PerMinute(600), 10))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := newTestKeyed(t, tt.lim, KeyedOptions{MaxKeys: maxKeys})
			require.Equal(t, 10, drain(k, t0, "drained", 100))
			now := t0
			for i := range 10 * maxKeys {
				now = now.Add(100 * time.Microsecond) // the flood comes after the drain
				_, ok := k.AdmitAt(now, "made-up-"+strconv.Itoa(i), 1)
				require.True(t, ok)
			}
			assert.False(t, k.AllowAt(now, "drained", 1), "the drained key is still drained")
			assert.LessOrEqual(t, k.Len(), maxKeys)
		})
	}
}

// TestKeyedNeverEvictsPausedOrWaited: a key that is paused is never evicted
// to make room; when every key of the shard is, new keys share the overflow
// limit, which keeps memory bounded.
func TestKeyedNeverEvictsPausedOrWaited(t *testing.T) {
	const maxKeys, paused = 64, 32 // one shard; a paused key holds limit state and a pause, two of its 64
	k := newTestKeyed(t, TokenBucket(PerSecond(1), 1), KeyedOptions{MaxKeys: maxKeys})
	for i := range paused {
		key := "paused-" + strconv.Itoa(i)
		require.True(t, k.AllowAt(t0, key, 1))
		k.PauseUntil(key, t0.Add(time.Hour))
	}
	assert.True(t, k.AllowAt(t0, "new-1", 1), "the overflow limit's one unit")
	assert.False(t, k.AllowAt(t0, "new-2", 1), "new keys share the overflow limit")
	for i := range paused {
		wantPaused(t, k, "paused-"+strconv.Itoa(i), t0.Add(time.Hour))
	}
	assert.Equal(t, paused, k.Len())
}

// BenchmarkKeyedNewKeyAt1MKeys is the cost of a key never seen before in a
// Keyed that holds DefaultMaxKeys keys already (its bound): a flood of made-up keys,
// each one evicting a key to make room. The keys are built beforehand, so
// their bytes and building are not counted.
func BenchmarkKeyedNewKeyAt1MKeys(b *testing.B) {
	fresh := make([]string, 1_000_000)
	for i := range fresh {
		fresh[i] = "new-" + strconv.Itoa(i) + ".example.com"
	}
	k := newTestKeyed(b, TokenBucket(PerMinute(60), 10), KeyedOptions{})
	for i := range DefaultMaxKeys + DefaultMaxKeys/8 { // every shard full
		k.AllowAt(t0, "old-"+strconv.Itoa(i)+".example.com", 1)
	}
	now, i := t0, 0
	b.ReportAllocs()
	for b.Loop() {
		if i == len(fresh) {
			b.Fatal("ran out of new keys")
		}
		now = now.Add(time.Microsecond)
		if !k.AllowAt(now, fresh[i], 1) {
			b.Fatal("a new key's first request refused")
		}
		i++
	}
	if k.Len() > DefaultMaxKeys+63 {
		b.Fatalf("Len() = %d, past DefaultMaxKeys", k.Len())
	}
}
