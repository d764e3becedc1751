package intmath

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCeilDiv(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{0, 1, 0}, {1, 1, 1}, {1, 2, 1}, {2, 2, 1}, {3, 2, 2},
		{10, 3, 4}, {9, 3, 3}, {math.MaxInt64, 1, math.MaxInt64}, {math.MaxInt64, 2, 1 << 62},
	} {
		assert.Equal(t, c.want, CeilDiv(c.a, c.b), "CeilDiv(%d, %d)", c.a, c.b)
	}
}
