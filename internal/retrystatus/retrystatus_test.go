package retrystatus

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRetried: nil means the defaults, an empty list no status, a list
// exactly its codes; the switch and Default agree.
func TestRetried(t *testing.T) {
	for code := 100; code < 600; code++ {
		want := false
		for _, d := range Default() {
			want = want || d == code
		}
		assert.Equal(t, want, Retried(nil, code), "Retried(nil, %d)", code)
		assert.False(t, Retried([]int{}, code), "Retried([], %d)", code)
	}
	assert.True(t, Retried([]int{http.StatusConflict}, http.StatusConflict))
	assert.False(t, Retried([]int{http.StatusConflict}, http.StatusServiceUnavailable))
	assert.Len(t, Default(), 6)
}

// TestOfWithoutPace: before package pace sets it, Of knows no Transport.
func TestOfWithoutPace(t *testing.T) {
	list, ok := Of(http.DefaultTransport, nil)
	assert.Nil(t, list)
	assert.False(t, ok)
}
