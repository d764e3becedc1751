package redislimit

import (
	"sync"
	"sync/atomic"
	"time"
)

// inflight is what a Limiter remembers of a Permit between Wait and Settle,
// in Permit.State: what Depart and Settle send to Redis. A Permit never
// settled (a caller's bug) holds it until the Permit is dropped. Depart
// may run on another goroutine than Settle (net/http's writer), so what
// it records is atomic, and a move of the booking holds mu.
type inflight struct {
	lease int64        // the probe role's lease number, or 0
	slot  time.Time    // the booked instant on this machine's clock, at the latest
	wrote atomic.Int64 // when Depart was told the request was written (Unix ns), or 0

	mu      sync.Mutex // held by a move (Limiter.move), over its round trip
	at      int64      // the booked instant, µs on Redis's clock, as moved so far
	moved   int64      // how far the booking moved (µs; Depart, late answers)
	members []string   // the booking's sorted-set members, per part (see decision), as moved
}
