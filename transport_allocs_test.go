package pace

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pacehttp/pace/internal/testhttp"
)

// TestTransportSuccessPathAllocs: a request answered 200 at once costs the
// Transport no allocation, with and without a limit. The retry budget's
// withdraw is a method of the backoff state, made only after a failure: as
// a method value of the call it moved every call to the heap.
func TestTransportSuccessPathAllocs(t *testing.T) {
	canned := &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody}
	base := testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return canned, nil })
	req, err := http.NewRequest(http.MethodGet, "http://api.test/v1/items", nil)
	assert.NoError(t, err)
	for name, tr := range map[string]*Transport{
		"no limit": {Base: base},
		"limit":    {Base: base, Limits: Hosts{"*": {Limit: TokenBucket(PerSecond(1_000_000_000), 1_000_000)}}},
	} {
		t.Run(name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(1000, func() {
				if _, err := tr.RoundTrip(req); err != nil {
					t.Fatal(err)
				}
			})
			assert.Zero(t, allocs, "allocations per request")
		})
	}
}
