package retry

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRetryCheckBodyNone: Body of an attempt without a response, or with
// an empty one, is nil.
func TestRetryCheckBodyNone(t *testing.T) {
	for _, c := range []*Check{
		{Err: io.ErrUnexpectedEOF},
		{Response: &http.Response{StatusCode: 204, Body: http.NoBody}},
		{Response: &http.Response{StatusCode: 204}},
	} {
		b, err := c.Body()
		assert.Nil(t, b)
		assert.NoError(t, err)
	}
}

// closeCounter is a response body that counts its Close calls.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestCheckBodyKeepsWholeBody: Body reads the first 4 KiB of a 10 KiB
// body, a second call returns the same bytes without reading more, and the
// response's body still reads whole from its start; closing it closes the
// original body once.
func TestCheckBodyKeepsWholeBody(t *testing.T) {
	text := `{"error":{"code":"lock_timeout"}}` + strings.Repeat("x", 10<<10)
	orig := &closeCounter{Reader: strings.NewReader(text)}
	c := &Check{Response: &http.Response{StatusCode: http.StatusConflict, Body: orig}}

	b, err := c.Body()
	require.NoError(t, err)
	assert.True(t, text[:4<<10] == string(b), "the first 4 KiB: %d bytes", len(b))
	again, err := c.Body()
	require.NoError(t, err)
	assert.Equal(t, b, again, "a second call returns the same bytes")

	got, err := io.ReadAll(c.Response.Body)
	require.NoError(t, err)
	assert.True(t, text == string(got), "the body reads whole: %d bytes of %d", len(got), len(text))
	require.NoError(t, c.Response.Body.Close())
	assert.Equal(t, 1, orig.closed)
}
