package redislimit

import (
	"sync/atomic"
	"time"
)

// inflight is what a Limiter remembers of a Permit between Wait and Settle,
// in Permit.State: what Depart and Settle send to Redis. A Permit never
// settled (a caller's bug) holds it until the Permit is dropped. Depart
// may run on another goroutine than Settle (net/http's writer), so what
// it records is atomic.
type inflight struct {
	lease   int64        // the probe role's lease number, or 0
	at      int64        // the booked instant, µs on Redis's clock
	slot    time.Time    // the booked instant on this machine's clock, at the latest
	members []string     // the decision's sorted-set members, per part (see decision)
	wrote   atomic.Int64 // when Depart was told the request was written (Unix ns), or 0
	moved   atomic.Bool  // the booking was moved (Depart, or a late answer)
}
