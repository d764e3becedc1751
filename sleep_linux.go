//go:build linux

package pace

import (
	"syscall"
	"time"
)

// preciseSleep sleeps d (at most a few milliseconds) in nanosleep(2),
// which keeps to the microsecond where Go's timers keep to the
// millisecond. It blocks its thread, not the runtime's other goroutines,
// and burns no CPU. It reports whether it slept.
func preciseSleep(d time.Duration) bool {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var left syscall.Timespec
		err := syscall.Nanosleep(&ts, &left)
		if err != syscall.EINTR {
			return err == nil
		}
		ts = left
	}
}
