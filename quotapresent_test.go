package pace

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestQuotaPresent: quotaPresent finds each header serverQuota reads a
// reset from, whether the response has few headers (walked) or many
// (looked up by name), and nothing else.
func TestQuotaPresent(t *testing.T) {
	many := func(extra ...string) http.Header {
		h := http.Header{}
		for i := range 2 * len(quotaNames.names) {
			h.Set("X-Other-"+strconv.Itoa(i), "1")
		}
		for i := 0; i+1 < len(extra); i += 2 {
			h[extra[i]] = []string{extra[i+1]}
		}
		return h
	}
	for _, name := range quotaNames.names {
		assert.True(t, quotaPresent(http.Header{name: {"1"}}), "%s alone", name)
		assert.True(t, quotaPresent(http.Header{"Content-Type": {"text/plain"}, "Date": {"x"}, name: {"1"}}), "%s among few", name)
		assert.True(t, quotaPresent(many(name, "1")), "%s among many", name)
		assert.False(t, quotaPresent(http.Header{name: {}}), "%s without a value", name)
		assert.False(t, quotaPresent(many(name+"-Not", "1")), "%s-Not among many", name)
	}
	assert.False(t, quotaPresent(nil))
	assert.False(t, quotaPresent(http.Header{"Content-Type": {"text/plain"}}))
	assert.False(t, quotaPresent(http.Header{"": {"1"}}), "an empty name")
	assert.False(t, quotaPresent(many()))
	assert.True(t, quotaPresent(http.Header{"Ratelimit": {`"a";r=1;t=1`}}), "the IETF field")
	assert.True(t, quotaPresent(http.Header{"X-Ratelimit-Reset": {"1"}}), "X-RateLimit-Reset")
	assert.False(t, quotaPresent(http.Header{"X-Ratelimit-Limit": {"10"}}), "a limit without a reset names no delay")
}
