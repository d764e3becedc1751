package pace

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkKeyedAdmitAt measures AdmitAt (decision and Quota under one
// lock) beside AllowAt, on distinct keys per goroutine.
func BenchmarkKeyedAdmitAt(b *testing.B) {
	for _, bm := range []struct {
		name  string
		limit Limit
	}{
		{"bucket", TokenBucket(PerSecond(1_000_000_000), 1_000_000)},
		{"sliding log", SlidingLog(Rate{N: 1_000_000_000, Per: time.Millisecond})},
		{"all", All(TokenBucket(PerSecond(1_000_000_000), 1_000_000), FixedWindow(Rate{N: 1_000_000_000, Per: time.Millisecond}))},
	} {
		for _, admit := range []bool{false, true} {
			name := bm.name + "/AllowAt"
			if admit {
				name = bm.name + "/AdmitAt"
			}
			b.Run(name, func(b *testing.B) {
				k := newTestKeyed(b, bm.limit, KeyedOptions{})
				var id atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					key := strconv.FormatInt(id.Add(1), 10)
					now := time.Now()
					for pb.Next() {
						now = now.Add(time.Microsecond)
						if admit {
							k.AdmitAt(now, key, 1)
						} else {
							k.AllowAt(now, key, 1)
						}
					}
				})
			})
		}
	}
}
