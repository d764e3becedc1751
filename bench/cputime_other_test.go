//go:build !unix

package bench

import "time"

// processCPU is not measured on this platform: it returns 0.
func processCPU() time.Duration { return 0 }
