package redislimit

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/pacehttp/pace/throttle"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneMiB is a 1 MiB run of one byte, shared by the two long test keys.
var oneMiB = strings.Repeat("k", 1<<20)

// anyKeys are keys a Transport.Key may return (a user's API key can be
// any string) that cannot name Redis keys as they are, with a few plain
// ones beside them.
var anyKeys = map[string]string{
	"empty":            "",
	"brace":            "}",
	"brace first":      "}x",
	"brace last":       "a}",
	"hashed tag of a}": keyTag("a}"),
	"both braces":      "a{b}c",
	"open brace":       "{",
	"NUL":              "\x00",
	"NUL inside":       "a\x00b",
	"invalid UTF-8":    "\xff\xfe\xfd",
	"non-ASCII":        "äpi",
	"space":            "a b",
	"newline":          "a\nb",
	"1 MiB":            oneMiB + "1",
	"1 MiB twin":       oneMiB + "2",
	"plain":            "api.example:8443",
	"plain short":      "a",
	"plain at bound":   strings.Repeat("p", maxPlainKey),
	"beyond bound":     strings.Repeat("p", maxPlainKey+1),
	"mark first":       "#a",
}

// TestKeyTag: plain keys are their own tag; every other key gets "#" and
// 32 base64url characters; no tag holds a brace or exceeds maxPlainKey;
// distinct keys get distinct tags.
func TestKeyTag(t *testing.T) {
	tags := map[string]string{}
	for name, key := range anyKeys {
		tag := keyTag(key)
		assert.NotEmpty(t, tag, name)
		assert.LessOrEqual(t, len(tag), maxPlainKey, name)
		assert.NotContains(t, tag, "{", name)
		assert.NotContains(t, tag, "}", name)
		if plainKey(key) {
			assert.Equal(t, key, tag, name)
		} else {
			assert.Len(t, tag, hashedTagLen, name)
			assert.Equal(t, byte('#'), tag[0], name)
			assert.Regexp(t, `^#[A-Za-z0-9_-]{32}$`, tag, name)
		}
		if other, ok := tags[tag]; ok {
			t.Errorf("%s and %s share the tag %q", name, other, tag)
		}
		tags[tag] = name
		assert.Equal(t, tag, keyTag(key), "%s: the same key, the same tag", name)
	}
	for _, key := range []string{"api.example", "api.example:8443", "sk_live_abc", "a", strings.Repeat("p", maxPlainKey)} {
		assert.True(t, plainKey(key), "%q", key)
	}
	for _, key := range []string{"", "}", "a}", "{", "a b", "\x00", "äpi", "#a", strings.Repeat("p", maxPlainKey+1)} {
		assert.False(t, plainKey(key), "%q", key)
	}
}

// TestAnyKeySingleNode: every key of anyKeys decides on one redis-server,
// holds its own state, and names it in a bounded Redis key.
func TestAnyKeySingleNode(t *testing.T) {
	_, rdb := startRedis(t)
	testAnyKey(t, rdb)
}

// TestAnyKeyCluster is the same on a 3-master Redis Cluster: no decision
// meets CROSSSLOT (each would fail closed with ErrUnavailable).
func TestAnyKeyCluster(t *testing.T) {
	c := realserver.StartRedisCluster(t, 3)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	testAnyKey(t, cc)
	masters := map[string]bool{}
	for _, key := range anyKeys {
		m, err := cc.MasterForKey(context.Background(), "any:{"+keyTag(key)+"}:0")
		require.NoError(t, err)
		masters[m.Options().Addr] = true
	}
	assert.GreaterOrEqual(t, len(masters), 2, "the keys should land on several masters")
}

// nameBound is the longest Redis key name testAnyKey's prefixes allow: a
// prefix of at most 6 bytes, the braces, a plain key of maxPlainKey
// bytes, ":" and a one-digit suffix, or ":d:" and a decision's id (at
// most 13 base-36 digits of a uint64; see decisionKey).
const nameBound = 6 + 2 + maxPlainKey + 3 + 13

func testAnyKey(t *testing.T, rdb redis.UniversalClient) {
	ctx := waitCtx(t, 60*time.Second)
	// A generous Timeout: the test is about keys, not latency, and hashing
	// a 1 MiB key under -race on a busy machine takes a few milliseconds.
	o := Options{Timeout: 5 * time.Second}

	// One unit a minute (and a window of five): each key's first Wait is
	// admitted only if no other key used its unit; its second is refused.
	o.Prefix = "any:"
	lim := newLimiter(t, rdb, pace.All(pace.TokenBucket(pace.PerMinute(1), 1), pace.FixedWindow(pace.PerMinute(5))), o)
	for name, key := range anyKeys {
		p, err := lim.Wait(ctx, key, 0)
		require.NoError(t, err, name)
		assert.Zero(t, p.Delay, "%s: another key used its unit", name)
		lim.Settle(p, throttle.Outcome{Sent: true, Response: true})
	}
	for name, key := range anyKeys {
		_, err := lim.Wait(ctx, key, 10*time.Millisecond)
		assert.ErrorIs(t, err, pace.ErrWaitTooLong, name)
	}

	// A pause of one long key leaves its twin, and every other key, alone.
	o.Prefix = "pause:"
	paused := newLimiter(t, rdb, pace.TokenBucket(pace.PerHour(1000), 100), o) // a unit lasts 3.6 s, longer than the test
	p, err := paused.Wait(ctx, anyKeys["1 MiB"], 0)
	require.NoError(t, err)
	paused.Settle(p, throttle.Outcome{Sent: true, Response: true, Pause: time.Minute})
	for name, key := range anyKeys {
		_, err := paused.Wait(ctx, key, 10*time.Millisecond)
		if name == "1 MiB" {
			var we *pace.WaitError
			require.ErrorAs(t, err, &we)
			assert.ErrorIs(t, err, pace.ErrWaitTooLong)
			assert.Greater(t, we.Delay, 50*time.Second, "the pause")
			continue
		}
		assert.NoError(t, err, "%s shares the pause of the 1 MiB key", name)
	}

	keys := allKeys(t, rdb)
	longest := ""
	for _, k := range keys {
		if len(k) > len(longest) {
			longest = k
		}
	}
	assert.LessOrEqual(t, len(longest), nameBound, "%.200q", longest)
	counts := map[string]int{}
	for _, k := range stateKeys(keys) {
		counts[k[:strings.IndexByte(k, ':')]]++
	}
	assert.Equal(t, 2*len(anyKeys), counts["any"], "two parts for each key, none shared")
	assert.Equal(t, len(anyKeys)+2, counts["pause"], "one part for each key, one pause and the margin it widened")
	t.Logf("%d Redis keys, the longest %d bytes", len(keys), len(longest))

	testWakeLongKey(t, ctx, rdb, o)
}

// testWakeLongKey: a Settle that pauses a 1 MiB key announces it on the
// channel with the key's tag (a bounded message), and a request of the
// key sleeping on a booked slot wakes, gives the slot back and refuses
// the pause, instead of leaving at its slot.
func testWakeLongKey(t *testing.T, ctx context.Context, rdb redis.UniversalClient, o Options) {
	key := anyKeys["1 MiB"]
	o.Prefix = "wake:"
	lim := newLimiter(t, rdb, pace.TokenBucket(pace.Every(time.Second), 1), o)
	sub := rdb.Subscribe(ctx, "wake:throttle")
	defer sub.Close()
	_, err := sub.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)

	first, err := lim.Wait(ctx, key, 0)
	require.NoError(t, err)
	var (
		wg     sync.WaitGroup
		second throttle.Permit
		err2   error
	)
	wg.Go(func() { second, err2 = lim.Wait(ctx, key, 1500*time.Millisecond) })
	// The second request has booked when the bucket's TAT is 2 s ahead.
	part := "wake:{" + keyTag(key) + "}:0"
	require.Eventually(t, func() bool {
		v, err := rdb.Get(ctx, part).Result()
		if err != nil {
			return false
		}
		tat, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		if err != nil {
			return false
		}
		now, err := rdb.Time(ctx).Result()
		return err == nil && tat-now.UnixMicro() > 1500_000
	}, 700*time.Millisecond, 5*time.Millisecond, "the second request books a slot 1 s ahead")

	lim.Settle(first, throttle.Outcome{Sent: true, Response: true, Pause: 5 * time.Second})
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.LessOrEqual(t, len(msg.Payload), 64, "a bounded message")
	assert.Equal(t, "p 1 "+keyTag(key), msg.Payload, "the message carries the tag")
	wg.Wait()
	assert.ErrorIs(t, err2, pace.ErrWaitTooLong, "woken by the pause, the request refuses it (%v)", second.Delay)
}

// allKeys returns every key in rdb, on every master of a Cluster.
func allKeys(t testing.TB, rdb redis.UniversalClient) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var keys []string
	scan := func(ctx context.Context, c *redis.Client) error {
		ks, err := c.Keys(ctx, "*").Result()
		mu.Lock()
		keys = append(keys, ks...)
		mu.Unlock()
		return err
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		require.NoError(t, cc.ForEachMaster(ctx, scan))
	} else {
		require.NoError(t, scan(ctx, rdb.(*redis.Client)))
	}
	return keys
}

// stateKeys returns keys without the decisions' own (see decisionKey),
// which keep a reply for a few seconds.
func stateKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if !strings.Contains(k, "}:d:") {
			out = append(out, k)
		}
	}
	return out
}
