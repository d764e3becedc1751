package retry

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestJitterString: each strategy has its own name, a value that is none
// prints as Jitter(n), and the zero Jitter is FullJitter.
func TestJitterString(t *testing.T) {
	want := map[Jitter]string{
		FullJitter:         "full jitter",
		EqualJitter:        "equal jitter",
		DecorrelatedJitter: "decorrelated jitter",
		NoJitter:           "no jitter",
		Jitter(9):          "Jitter(9)",
		Jitter(-1):         "Jitter(-1)",
	}
	for j, name := range want {
		assert.Equal(t, name, j.String())
	}
	var zero Jitter
	assert.Equal(t, FullJitter, zero)
}
