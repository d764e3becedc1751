package pace

import (
	"context"
	"testing"
	"time"

	"github.com/pacehttp/pace/throttle"
)

// BenchmarkKeyedWaitTracked measures Wait and Settle of one key whose
// limit binds on every request (a fixed window always does), so that each
// request joins the key's queue (Permit.Track): the slow path the
// Transport takes when the instant a request leaves matters. Its one
// allocation is the request's place in the queue.
func BenchmarkKeyedWaitTracked(b *testing.B) {
	k := newTestKeyed(b, FixedWindow(Rate{N: 1 << 30, Per: time.Hour}), KeyedOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := k.Wait(ctx, "api.example.com", 0)
		if err != nil || !p.Track {
			b.Fatal(p, err)
		}
		k.Settle(p, throttle.Outcome{Sent: true, Response: true})
	}
}
