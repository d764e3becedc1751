//go:build !linux

package pace

import "time"

// preciseSleep is only implemented on Linux; elsewhere a booked wait keeps
// to the resolution of Go's timers.
func preciseSleep(time.Duration) bool { return false }
