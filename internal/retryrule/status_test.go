package retryrule

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRetried: nil means the defaults, an empty list no status, a list
// exactly its codes; the switch and Default agree.
func TestStatusRetried(t *testing.T) {
	for code := 100; code < 600; code++ {
		want := false
		for _, d := range DefaultStatuses() {
			want = want || d == code
		}
		assert.Equal(t, want, StatusRetried(nil, code), "StatusRetried(nil, %d)", code)
		assert.False(t, StatusRetried([]int{}, code), "StatusRetried([], %d)", code)
	}
	assert.True(t, StatusRetried([]int{http.StatusConflict}, http.StatusConflict))
	assert.False(t, StatusRetried([]int{http.StatusConflict}, http.StatusServiceUnavailable))
	assert.Len(t, DefaultStatuses(), 6)
}

// TestOfWithoutPace: before package pace sets it, Of knows no Transport.
func TestStatusesOfWithoutPace(t *testing.T) {
	list, ok := StatusesOf(http.DefaultTransport, nil)
	assert.Nil(t, list)
	assert.False(t, ok)
}
