package quickest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLate: lateness counts from the quickest of the latest Run to 2×Run
// answers; an old quick answer is forgotten after two windows.
func TestLate(t *testing.T) {
	var w Window
	assert.Zero(t, w.Late(-1), "ignored")
	assert.Zero(t, w.Late(100), "the first is the quickest")
	assert.Equal(t, int64(50), w.Late(150))
	assert.Zero(t, w.Late(80))
	assert.Equal(t, int64(20), w.Late(100))
	for range 2 * Run {
		w.Late(300)
	}
	assert.Zero(t, w.Late(300), "the quick answers of two windows ago are forgotten")
}

// TestKnown: a window knows its server after Run/2 answers, and still
// after its first window turns over.
func TestKnown(t *testing.T) {
	var w Window
	for range Run/2 - 1 {
		w.Late(100)
		assert.False(t, w.Known())
	}
	for range 2 * Run {
		w.Late(100)
		assert.True(t, w.Known())
	}
}
