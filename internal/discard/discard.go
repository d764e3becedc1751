// Package discard drains response bodies the way every package of pace
// does: the root Transport for the answers it retries, package batch after
// its check.
package discard

import "io"

// Max is the most of a body that Body reads: 64 KiB. Reading a short error
// body to its end lets net/http put the connection back in its idle pool;
// a longer one is not worth reading, and closing it costs only a new
// connection.
const Max = 64 << 10

// Body reads at most Max bytes of body, then closes it. A nil body is
// ignored. Read and close errors are dropped: the body is being discarded.
func Body(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, Max)
	_ = body.Close()
}
