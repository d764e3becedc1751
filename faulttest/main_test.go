package faulttest

import (
	"testing"

	"go.uber.org/goleak"
)

// toxiproxy's slicer toxic (TestFallbackFaults) leaves its goroutines
// blocked on sending a chunk to a link that has ended, after the proxy
// stops (toxics/slicer.go in toxiproxy v2.5.0): they are toxiproxy's, not
// pace's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*SlicerToxic).Pipe"))
}
