package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a benchmark leaves a goroutine behind
// (a peer's limiter, a Transport's connection, a Redis client).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
