package pace

import (
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// quotaStep is one instant of a quota table test: admit calls of AdmitAt
// for one unit each at t0+at, of which the first wantOK succeed, and the
// Quota after the last call (or QuotaAt's, when admit is 0).
type quotaStep struct {
	at     time.Duration
	admit  int
	wantOK int
	want   Quota
}

func TestKeyedQuotaAt(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name  string
		limit Limit
		steps []quotaStep
	}{
		{"token bucket 10/s burst 5", TokenBucket(PerSecond(10), 5), []quotaStep{
			{0, 0, 0, Quota{Limit: 5, Window: 500 * ms, Remaining: 5}},
			{0, 1, 1, Quota{Limit: 5, Window: 500 * ms, Remaining: 4, Reset: 100 * ms}},
			{0, 4, 4, Quota{Limit: 5, Window: 500 * ms, Remaining: 0, Reset: 500 * ms, Wait: 100 * ms}},
			{0, 1, 0, Quota{Limit: 5, Window: 500 * ms, Remaining: 0, Reset: 500 * ms, Wait: 100 * ms}},
			{250 * ms, 0, 0, Quota{Limit: 5, Window: 500 * ms, Remaining: 2, Reset: 250 * ms}},
			{999 * ms, 0, 0, Quota{Limit: 5, Window: 500 * ms, Remaining: 5}},
		}},
		{"leaky 10/s: the queue is not quota", LeakyBucket(PerSecond(10), LeakyOptions{Queue: 3}), []quotaStep{
			{0, 1, 1, Quota{Limit: 1, Window: 100 * ms, Reset: 100 * ms, Wait: 100 * ms}},
			{40 * ms, 1, 0, Quota{Limit: 1, Window: 100 * ms, Reset: 60 * ms, Wait: 60 * ms}},
			{100 * ms, 1, 1, Quota{Limit: 1, Window: 100 * ms, Reset: 100 * ms, Wait: 100 * ms}},
		}},
		{"leaky 10/s slack 2", LeakyBucket(PerSecond(10), LeakyOptions{Slack: 2}), []quotaStep{
			{0, 2, 2, Quota{Limit: 3, Window: 300 * ms, Remaining: 1, Reset: 200 * ms}},
			{50 * ms, 2, 1, Quota{Limit: 3, Window: 300 * ms, Reset: 250 * ms, Wait: 50 * ms}},
		}},
		{"fixed window 3/s", FixedWindow(PerSecond(3)), []quotaStep{
			{500 * ms, 0, 0, Quota{Limit: 3, Window: time.Second, Remaining: 3}},
			{500 * ms, 2, 2, Quota{Limit: 3, Window: time.Second, Remaining: 1, Reset: 500 * ms}},
			{700 * ms, 2, 1, Quota{Limit: 3, Window: time.Second, Reset: 300 * ms, Wait: 300 * ms}},
			{time.Second, 0, 0, Quota{Limit: 3, Window: time.Second, Remaining: 3}},
		}},
		{"sliding log 3/s", SlidingLog(PerSecond(3)), []quotaStep{
			{0, 1, 1, Quota{Limit: 3, Window: time.Second, Remaining: 2, Reset: time.Second}},
			{400 * ms, 1, 1, Quota{Limit: 3, Window: time.Second, Remaining: 1, Reset: time.Second}},
			{800 * ms, 2, 1, Quota{Limit: 3, Window: time.Second, Reset: time.Second, Wait: 200 * ms}},
			{time.Second, 0, 0, Quota{Limit: 3, Window: time.Second, Remaining: 1, Reset: 800 * ms}},
			{1400 * ms, 0, 0, Quota{Limit: 3, Window: time.Second, Remaining: 2, Reset: 400 * ms}},
		}},
		{"sliding counter 4/s", SlidingCounter(PerSecond(4)), []quotaStep{
			{500 * ms, 4, 4, Quota{Limit: 4, Window: time.Second, Reset: 1500 * ms, Wait: 750 * ms}},
			{1500 * ms, 0, 0, Quota{Limit: 4, Window: time.Second, Remaining: 2, Reset: 500 * ms}},
			{1750 * ms, 0, 0, Quota{Limit: 4, Window: time.Second, Remaining: 3, Reset: 250 * ms}},
			{1750 * ms, 4, 3, Quota{Limit: 4, Window: time.Second, Reset: 1250 * ms, Wait: 250 * ms}},
		}},
		{"all of bucket and fixed window", All(TokenBucket(PerSecond(10), 5), FixedWindow(PerMinute(7))), []quotaStep{
			{0, 6, 5, Quota{Limit: 5, Window: 500 * ms, Reset: time.Minute, Wait: 100 * ms, Parts: []Quota{
				{Limit: 5, Window: 500 * ms, Reset: 500 * ms, Wait: 100 * ms},
				{Limit: 7, Window: time.Minute, Remaining: 2, Reset: time.Minute},
			}}},
			{time.Second, 3, 2, Quota{Limit: 7, Window: time.Minute, Remaining: 0, Reset: 59 * time.Second, Wait: 59 * time.Second, Parts: []Quota{
				{Limit: 5, Window: 500 * ms, Remaining: 3, Reset: 200 * ms},
				{Limit: 7, Window: time.Minute, Reset: 59 * time.Second, Wait: 59 * time.Second},
			}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newTestKeyed(t, tt.limit, KeyedOptions{})
			for i, s := range tt.steps {
				now := at(s.at)
				got := k.QuotaAt(now, "k")
				oks := 0
				for range s.admit {
					var ok bool
					if got, ok = k.AdmitAt(now, "k", 1); ok {
						oks++
					}
				}
				if oks != s.wantOK {
					t.Errorf("step %d: %d of %d AdmitAt(%v) admitted, want %d", i, oks, s.admit, s.at, s.wantOK)
				}
				if !reflect.DeepEqual(got, s.want) {
					t.Errorf("step %d at %v: Quota = %+v, want %+v", i, s.at, got, s.want)
				}
				if q := k.QuotaAt(now, "k"); !reflect.DeepEqual(q, got) {
					t.Errorf("step %d: QuotaAt after AdmitAt = %+v, want the same as AdmitAt's %+v", i, q, got)
				}
			}
		})
	}
}

func TestKeyedQuotaAtTracksNothing(t *testing.T) {
	k := newTestKeyed(t, SlidingLog(PerMinute(10)), KeyedOptions{})
	for i := range 100 {
		q := k.QuotaAt(at(0), strconv.Itoa(i))
		if want := (Quota{Limit: 10, Window: time.Minute, Remaining: 10}); !reflect.DeepEqual(q, want) {
			t.Fatalf("QuotaAt of a new key = %+v, want %+v", q, want)
		}
	}
	wantLen(t, k, 0)
	if _, ok := k.AdmitAt(at(0), "a", 11); ok {
		t.Errorf("AdmitAt(n=11) over a limit of 10 = true, want false")
	}
	if _, ok := k.AdmitAt(at(0), "a", 0); ok {
		t.Errorf("AdmitAt(n=0) = true, want false")
	}
	wantLen(t, k, 0)
	if q, ok := k.AdmitAt(at(0), "a", 10); !ok || q.Remaining != 0 || q.Wait != time.Minute {
		t.Errorf("AdmitAt(n=10) = %+v, %v, want Remaining 0, Wait 1m, true", q, ok)
	}
	wantLen(t, k, 1)
}

func TestKeyedQuotaPaused(t *testing.T) {
	k := newTestKeyed(t, TokenBucket(PerSecond(10), 5), KeyedOptions{})
	k.PauseUntil("k", at(2*time.Second))
	want := Quota{Limit: 5, Window: 500 * time.Millisecond, Reset: 2 * time.Second, Wait: 2 * time.Second}
	if q := k.QuotaAt(at(0), "k"); !reflect.DeepEqual(q, want) {
		t.Errorf("QuotaAt while paused = %+v, want %+v", q, want)
	}
	if q, ok := k.AdmitAt(at(0), "k", 1); ok || !reflect.DeepEqual(q, want) {
		t.Errorf("AdmitAt while paused = %+v, %v, want %+v, false", q, ok, want)
	}
	if q, ok := k.AdmitAt(at(2*time.Second), "k", 1); !ok || q.Remaining != 4 {
		t.Errorf("AdmitAt when the pause ends = %+v, %v, want Remaining 4, true", q, ok)
	}

	pauses := newTestKeyed(t, Limit{}, KeyedOptions{})
	if q := pauses.QuotaAt(at(0), "k"); !reflect.DeepEqual(q, Quota{}) {
		t.Errorf("QuotaAt with no limit = %+v, want the zero Quota", q)
	}
	pauses.PauseUntil("k", at(time.Second))
	if q, ok := pauses.AdmitAt(at(0), "k", 1); ok || !reflect.DeepEqual(q, Quota{Wait: time.Second}) {
		t.Errorf("AdmitAt with no limit, paused = %+v, %v, want Wait 1s, false", q, ok)
	}
	if _, ok := pauses.AdmitAt(at(time.Second), "k", 1); !ok {
		t.Errorf("AdmitAt with no limit after the pause = false, want true")
	}
}

// TestKeyedQuotaFullShard: a new key of a full shard books and reports its
// own fresh limit (another key is evicted when it books), and a query alone
// evicts nothing and tracks nothing.
func TestKeyedQuotaFullShard(t *testing.T) {
	k := newTestKeyed(t, TokenBucket(PerHour(1), 2), KeyedOptions{MaxKeys: 1})
	if _, ok := k.AdmitAt(at(0), "a", 1); !ok {
		t.Fatal("AdmitAt(a) = false, want true")
	}
	if q := k.QuotaAt(at(0), "c"); q.Remaining != 2 || q.Wait != 0 {
		t.Errorf("QuotaAt(c) of a new key = %+v, want Remaining 2, Wait 0", q)
	}
	if q := k.QuotaAt(at(0), "a"); q.Remaining != 1 {
		t.Errorf("QuotaAt(a), tracked = %+v, want Remaining 1: a query evicts nothing", q)
	}
	for i := range 2 {
		q, ok := k.AdmitAt(at(0), "b"+strconv.Itoa(i), 1)
		if !ok || q.Remaining != 1 {
			t.Errorf("AdmitAt(b%d) = %+v, %v, want Remaining 1, true: its own fresh limit", i, q, ok)
		}
	}
	if q := k.QuotaAt(at(0), "a"); q.Remaining != 2 {
		t.Errorf("QuotaAt(a), evicted = %+v, want Remaining 2: a fresh limit", q)
	}
	wantLen(t, k, 1)
}

// TestQuotaWaitUnrepresentable checks that a wait beyond int64 time is the
// largest Duration, never a negative one.
func TestQuotaWaitUnrepresentable(t *testing.T) {
	alg := FixedWindow(Rate{N: 1, Per: math.MaxInt64 / 2}).alg
	c := cell{a: 2, b: 1} // window 2 is full; window 3 starts past MaxInt64
	q := quotaAt(alg, &c, 1, 1)
	if q.Wait != math.MaxInt64 || q.Reset != math.MaxInt64 || q.Remaining != 0 {
		t.Errorf("quota = %+v, want Remaining 0 and Reset, Wait = MaxInt64", q)
	}
}
