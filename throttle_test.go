package pace

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// thOp is one call on a throttle in a table test, on explicit integer
// time. Only the fields its kind uses are read.
type thOp struct {
	kind  string // "admit", "throttled", "pause", "answered", "released"
	now   int64
	d     int64  // throttled, pause: the pause length
	gen   uint32 // throttled, pause: the generation the request left under
	probe bool   // throttled, pause, answered, released: it holds the latest probe role

	admit admission   // admit: the admission expected
	set   bool        // throttled, pause: whether the pause was set or extended
	after keyThrottle // the whole state expected after the call, but the probe role's number (TestThrottleProbeHoldsUntilAnswer)
}

func (o thOp) String() string {
	return fmt.Sprintf("%s(now %d, d %d, gen %d, probe %v)", o.kind, o.now, o.d, o.gen, o.probe)
}

// runThrottle applies ops to th in order and checks each result and the
// state after it.
func runThrottle(t *testing.T, th *keyThrottle, ops []thOp) {
	t.Helper()
	for i, o := range ops {
		probe := uint32(0)
		if o.probe {
			probe = th.lease
		}
		switch o.kind {
		case "admit":
			require.Equal(t, o.admit, th.admit(o.now), "step %d: %v", i, o)
		case "throttled":
			require.Equal(t, o.set, th.throttled(o.now, o.d, o.gen, probe), "step %d: %v", i, o)
		case "pause":
			require.Equal(t, o.set, th.pause(o.now, o.d, o.gen, probe), "step %d: %v", i, o)
		case "answered":
			th.answered(o.now, probe)
		case "released":
			th.released(probe)
		default:
			t.Fatalf("step %d: unknown op %q", i, o.kind)
		}
		got := *th
		got.lease = 0
		require.Equal(t, o.after, got, "step %d: state after %v", i, o)
	}
}

// TestThrottlePauseOnlyExtends: a throttle sets the pause to now+d only
// when that ends later than the pause in force; a shorter or equal one
// leaves the end, the length and the generation alone (and reports that
// nothing changed, so no booking is given back). The end saturates instead
// of wrapping.
func TestThrottlePauseOnlyExtends(t *testing.T) {
	tests := []struct {
		name string
		ops  []thOp
	}{
		{"longer extends, shorter and equal do not", []thOp{
			{kind: "throttled", now: 0, d: 20, set: true,
				after: keyThrottle{until: 20, length: 20, gen: 1, strikes: 1, halfOpen: true}},
			{kind: "throttled", now: 5, d: 10, set: false, // ends at 15 < 20
				after: keyThrottle{until: 20, length: 20, gen: 1, strikes: 1, halfOpen: true}},
			{kind: "throttled", now: 5, d: 15, set: false, // ends at 20 == 20
				after: keyThrottle{until: 20, length: 20, gen: 1, strikes: 1, halfOpen: true}},
			{kind: "throttled", now: 5, d: 30, set: true, // ends at 35
				after: keyThrottle{until: 35, length: 30, gen: 2, strikes: 1, halfOpen: true}},
		}},
		{"a pause without a probe (PauseUntil) has no length, is not half-open and is no strike", []thOp{
			{kind: "pause", now: 0, d: 20, set: true,
				after: keyThrottle{until: 20, gen: 1}},
			{kind: "pause", now: 10, d: 5, gen: 1, set: false,
				after: keyThrottle{until: 20, gen: 1}},
			{kind: "admit", now: 19, admit: admitPaused,
				after: keyThrottle{until: 20, gen: 1}},
			{kind: "admit", now: 20, admit: admitGo, // no probe when it ends
				after: keyThrottle{until: 20, gen: 1}},
		}},
		{"the end saturates", []thOp{
			{kind: "throttled", now: math.MaxInt64 - 5, d: 100, set: true,
				after: keyThrottle{until: math.MaxInt64, length: 100, gen: 1, strikes: 1, halfOpen: true}},
			{kind: "throttled", now: math.MaxInt64 - 1, d: 100, gen: 1, set: false,
				after: keyThrottle{until: math.MaxInt64, length: 100, gen: 1, strikes: 2, halfOpen: true}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var th keyThrottle
			runThrottle(t, &th, tt.ops)
		})
	}
}

// TestThrottleAdmitStates walks one key through the half-open states of a
// circuit breaker on explicit time: during the pause nothing leaves; when
// it ends the first request to ask is the probe and every other one waits
// for it; an answer closes the key, a throttled answer pauses it again
// (and counts in probes, so that its waiters can count the attempt as
// theirs), and a probe that ends without an answer hands the role on.
func TestThrottleAdmitStates(t *testing.T) {
	paused := keyThrottle{until: 10, length: 10, gen: 1, strikes: 1, halfOpen: true}
	probing := paused
	probing.probing = true
	tests := []struct {
		name string
		ops  []thOp
	}{
		{"never throttled: go", []thOp{
			{kind: "admit", now: 0, admit: admitGo},
			{kind: "answered", now: 0},
			{kind: "released", probe: true},
			{kind: "admit", now: 1, admit: admitGo},
		}},
		{"paused, probe, wait-probe, answered closes", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true, after: paused},
			{kind: "admit", now: 0, admit: admitPaused, after: paused},
			{kind: "admit", now: 9, admit: admitPaused, after: paused},
			{kind: "admit", now: 10, admit: admitProbe, after: probing},
			{kind: "admit", now: 10, admit: admitWaitProbe, after: probing},
			{kind: "admit", now: 500, admit: admitWaitProbe, after: probing}, // however late
			{kind: "answered", now: 12, probe: true,
				after: keyThrottle{until: 10, length: 10, gen: 1}},
			{kind: "admit", now: 12, admit: admitGo,
				after: keyThrottle{until: 10, length: 10, gen: 1}},
		}},
		{"a throttled probe pauses again", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true, after: paused},
			{kind: "admit", now: 10, admit: admitProbe, after: probing},
			{kind: "throttled", now: 11, d: 20, gen: 1, probe: true, set: true,
				after: keyThrottle{until: 31, length: 20, gen: 2, strikes: 2, probes: 1, halfOpen: true}},
			{kind: "admit", now: 11, admit: admitPaused,
				after: keyThrottle{until: 31, length: 20, gen: 2, strikes: 2, probes: 1, halfOpen: true}},
			{kind: "admit", now: 31, admit: admitProbe,
				after: keyThrottle{until: 31, length: 20, gen: 2, strikes: 2, probes: 1, halfOpen: true, probing: true}},
			{kind: "answered", now: 32, probe: true,
				after: keyThrottle{until: 31, length: 20, gen: 2, probes: 1}},
		}},
		{"a released probe hands the role on", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true, after: paused},
			{kind: "admit", now: 10, admit: admitProbe, after: probing},
			{kind: "released", probe: false, after: probing}, // not the probe: nothing
			{kind: "released", probe: true, after: paused},
			{kind: "admit", now: 11, admit: admitProbe, after: probing},
			{kind: "admit", now: 11, admit: admitWaitProbe, after: probing},
		}},
		{"an answer to another request while the probe is out keeps the key half-open", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true, after: paused},
			{kind: "admit", now: 10, admit: admitProbe, after: probing},
			{kind: "answered", now: 11, probe: false, // a request that left before the pause
				after: keyThrottle{until: 10, length: 10, gen: 1, halfOpen: true, probing: true}},
			{kind: "admit", now: 11, admit: admitWaitProbe,
				after: keyThrottle{until: 10, length: 10, gen: 1, halfOpen: true, probing: true}},
		}},
		{"an answer to a probe does not close a key paused again meanwhile", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true, after: paused},
			{kind: "admit", now: 10, admit: admitProbe, after: probing},
			// A request that left before the pause is throttled late.
			{kind: "throttled", now: 11, d: 10, gen: 0, set: true,
				after: keyThrottle{until: 21, length: 10, gen: 2, strikes: 1, halfOpen: true, probing: true}},
			{kind: "answered", now: 12, probe: true,
				after: keyThrottle{until: 21, length: 10, gen: 2, halfOpen: true}},
			{kind: "admit", now: 15, admit: admitPaused,
				after: keyThrottle{until: 21, length: 10, gen: 2, halfOpen: true}},
			{kind: "admit", now: 21, admit: admitProbe,
				after: keyThrottle{until: 21, length: 10, gen: 2, halfOpen: true, probing: true}},
		}},
		{"a late throttle of a request sent before the pause is ignored once the key has closed", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true, after: paused},
			{kind: "admit", now: 10, admit: admitProbe, after: probing},
			{kind: "answered", now: 11, probe: true,
				after: keyThrottle{until: 10, length: 10, gen: 1}},
			{kind: "throttled", now: 12, d: 10, gen: 0, set: false,
				after: keyThrottle{until: 10, length: 10, gen: 1}},
			{kind: "admit", now: 12, admit: admitGo,
				after: keyThrottle{until: 10, length: 10, gen: 1}},
			{kind: "throttled", now: 13, d: 10, gen: 1, set: true, // fresh news
				after: keyThrottle{until: 23, length: 10, gen: 2, strikes: 1, halfOpen: true}},
		}},
		{"a throttled probe that sets no longer pause still ends its role", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true, after: paused},
			{kind: "admit", now: 10, admit: admitProbe, after: probing},
			{kind: "throttled", now: 10, d: 100, gen: 0, set: true, // a late throttle: until 110
				after: keyThrottle{until: 110, length: 100, gen: 2, strikes: 1, halfOpen: true, probing: true}},
			{kind: "throttled", now: 11, d: 5, gen: 1, probe: true, set: false,
				after: keyThrottle{until: 110, length: 100, gen: 2, strikes: 1, probes: 1, halfOpen: true}},
			{kind: "admit", now: 110, admit: admitProbe,
				after: keyThrottle{until: 110, length: 100, gen: 2, strikes: 1, probes: 1, halfOpen: true, probing: true}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var th keyThrottle
			runThrottle(t, &th, tt.ops)
		})
	}
}

// TestThrottleStrikesCountFreshThrottles: strikes count consecutive
// throttles of requests that left under the current generation; a
// throttle of a request that left before the latest pause was set is the
// same news again and no new strike, however many come
// (env0/terraform-provider-env0#1127: parallel requests of one burst must
// not multiply the pause). Any answer that is not a throttle resets them.
// probes counts only the throttled answers of probes.
func TestThrottleStrikesCountFreshThrottles(t *testing.T) {
	tests := []struct {
		name        string
		ops         []thOp
		wantStrikes uint32
		wantProbes  uint32
	}{
		{"ten throttles of one burst are one strike", func() []thOp {
			var ops []thOp
			for i := range 10 {
				st := keyThrottle{until: 10, length: 10, gen: 1, strikes: 1, halfOpen: true}
				ops = append(ops, thOp{kind: "throttled", now: 0, d: 10, gen: 0, set: i == 0, after: st})
			}
			return ops
		}(), 1, 0},
		{"each throttled probe is a strike", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true,
				after: keyThrottle{until: 10, length: 10, gen: 1, strikes: 1, halfOpen: true}},
			{kind: "admit", now: 10, admit: admitProbe,
				after: keyThrottle{until: 10, length: 10, gen: 1, strikes: 1, halfOpen: true, probing: true}},
			{kind: "throttled", now: 10, d: 20, gen: 1, probe: true, set: true,
				after: keyThrottle{until: 30, length: 20, gen: 2, strikes: 2, probes: 1, halfOpen: true}},
			{kind: "admit", now: 30, admit: admitProbe,
				after: keyThrottle{until: 30, length: 20, gen: 2, strikes: 2, probes: 1, halfOpen: true, probing: true}},
			{kind: "throttled", now: 30, d: 40, gen: 2, probe: true, set: true,
				after: keyThrottle{until: 70, length: 40, gen: 3, strikes: 3, probes: 2, halfOpen: true}},
			// The probe's stale colleagues from the first burst: no strike.
			{kind: "throttled", now: 31, d: 10, gen: 0, set: false,
				after: keyThrottle{until: 70, length: 40, gen: 3, strikes: 3, probes: 2, halfOpen: true}},
		}, 3, 2},
		{"an answer resets the strikes, not the probes", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true,
				after: keyThrottle{until: 10, length: 10, gen: 1, strikes: 1, halfOpen: true}},
			{kind: "admit", now: 10, admit: admitProbe,
				after: keyThrottle{until: 10, length: 10, gen: 1, strikes: 1, halfOpen: true, probing: true}},
			{kind: "throttled", now: 10, d: 20, gen: 1, probe: true, set: true,
				after: keyThrottle{until: 30, length: 20, gen: 2, strikes: 2, probes: 1, halfOpen: true}},
			{kind: "admit", now: 30, admit: admitProbe,
				after: keyThrottle{until: 30, length: 20, gen: 2, strikes: 2, probes: 1, halfOpen: true, probing: true}},
			{kind: "answered", now: 31, probe: true,
				after: keyThrottle{until: 30, length: 20, gen: 2, probes: 1}},
			{kind: "throttled", now: 40, d: 10, gen: 2, set: true,
				after: keyThrottle{until: 50, length: 10, gen: 3, strikes: 1, probes: 1, halfOpen: true}},
		}, 1, 1},
		{"a throttle of a request sent under an older pause after an answer is no strike", []thOp{
			{kind: "throttled", now: 0, d: 10, set: true,
				after: keyThrottle{until: 10, length: 10, gen: 1, strikes: 1, halfOpen: true}},
			{kind: "answered", now: 5,
				after: keyThrottle{until: 10, length: 10, gen: 1, halfOpen: true}},
			{kind: "throttled", now: 6, d: 10, gen: 0, set: true, // extends to 16, no strike
				after: keyThrottle{until: 16, length: 10, gen: 2, halfOpen: true}},
		}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var th keyThrottle
			runThrottle(t, &th, tt.ops)
			assert.Equal(t, tt.wantStrikes, th.strikes, "strikes")
			assert.Equal(t, tt.wantProbes, th.probes, "probes")
		})
	}
}

// TestThrottleForgettable: a sweep may drop a throttle, never while its
// probe is out; a plain pause (PauseUntil, no
// length) as soon as it ends; a throttle, even half-open (a waiter would
// have taken the probe), only once its pause ended staleAfter (or its
// length, if longer) ago, so that a late answer to a request sent before
// the pause is still known as old news.
func TestThrottleForgettable(t *testing.T) {
	throttled := keyThrottle{until: 10, length: 10, gen: 1, strikes: 1, halfOpen: true}
	probing := throttled
	probing.probing, probing.lease = true, 1
	closed := keyThrottle{until: 10, length: 10, gen: 1}
	long := keyThrottle{until: 10, length: 2 * staleAfter, gen: 1}
	pausedOnly := keyThrottle{until: 10, gen: 1, strikes: 1} // PauseUntil: no length
	tests := []struct {
		name     string
		th       keyThrottle
		now      int64
		forgetMe bool
	}{
		{"zero", keyThrottle{}, 0, true},
		{"during the pause", throttled, 5, false},
		{"pause just ended, half-open", throttled, 10, false},
		{"one pause length later, half-open", throttled, 20, false},
		{"staleAfter later, half-open", throttled, 10 + staleAfter, true},
		{"staleAfter later, a probe in flight", probing, 10 + staleAfter, false},
		{"long after, a probe in flight", probing, 1 << 62, false},
		{"closed, within a pause length", closed, 19, false},
		{"closed, one pause length later", closed, 20, false},
		{"closed, just before staleAfter", closed, 9 + staleAfter, false},
		{"closed, staleAfter later", closed, 10 + staleAfter, true},
		{"a pause longer than staleAfter, staleAfter later", long, 10 + staleAfter, false},
		{"a pause longer than staleAfter, one pause length later", long, 10 + 2*staleAfter, true},
		{"PauseUntil, during", pausedOnly, 9, false},
		{"PauseUntil, as it ends", pausedOnly, 10, true},
		{"saturated pause", keyThrottle{until: math.MaxInt64, length: 10, halfOpen: true}, math.MaxInt64 - 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := tt.th
			assert.Equal(t, tt.forgetMe, th.forgettable(tt.now), "forgettable(%d)", tt.now)
			assert.Equal(t, tt.th, th, "forgettable changes nothing")
		})
	}
}

// TestThrottleProbeHoldsUntilAnswer: a probe holds its role until it ends,
// however slow its answer, so a slow server's first good answer closes the
// key. Before, the role passed on after a lease of 1-30 s and only the
// latest holder's answer closed the key: a server answering in 1.5 s after
// Retry-After: 1 kept its key at one request a second for good.
func TestThrottleProbeHoldsUntilAnswer(t *testing.T) {
	const s = int64(time.Second)
	t.Run("no second probe while one is in flight", func(t *testing.T) {
		var th keyThrottle
		require.True(t, th.throttled(0, s, 0, 0))
		require.Equal(t, admitProbe, th.admit(s))
		for _, now := range []int64{s + 1, 3 * s, 60 * s, 1 << 62} {
			assert.Equal(t, admitWaitProbe, th.admit(now), "at %d", now)
		}
		assert.Equal(t, uint32(1), th.lease, "one role granted")
		th.answered(1<<62, th.lease) // however late
		assert.False(t, th.probing || th.halfOpen, "the answer closes the key")
		assert.Equal(t, admitGo, th.admit(1<<62))
	})
	t.Run("an earlier role cannot end the current one", func(t *testing.T) {
		var th keyThrottle
		require.True(t, th.throttled(0, 2*s, 0, 0))
		require.Equal(t, admitProbe, th.admit(2*s))
		old := th.lease
		th.released(old) // ended without an answer: the role passes on
		require.Equal(t, admitProbe, th.admit(2*s))
		th.released(old)
		assert.True(t, th.probing, "released by an earlier role")
		th.answered(3*s, old)
		assert.True(t, th.probing && th.halfOpen, "an earlier role's answer does not close the key")
		th.answered(3*s, th.lease)
		assert.False(t, th.probing || th.halfOpen)
	})
	t.Run("an earlier role's throttle pauses but is no probe answer", func(t *testing.T) {
		var th keyThrottle
		require.True(t, th.throttled(0, 2*s, 0, 0))
		require.Equal(t, admitProbe, th.admit(2*s))
		old := th.lease
		th.released(old)
		require.Equal(t, admitProbe, th.admit(2*s))
		require.True(t, th.throttled(3*s, 3*s, th.gen, old), "still a throttle: the key pauses")
		assert.Equal(t, uint32(0), th.probes, "not the current probe's answer")
		assert.True(t, th.probing, "the current probe keeps its role")
	})
}
