package bodyprefix

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestReadThenPrepend: the bytes Read takes are put back by Prepend, so the
// body reads whole, and its Close closes the original once.
func TestReadThenPrepend(t *testing.T) {
	text := strings.Repeat("abc", 3000) // 9000 bytes, more than Max
	orig := &closeCounter{Reader: strings.NewReader(text)}
	prefix, err := Read(orig, Max)
	require.NoError(t, err)
	assert.Len(t, prefix, Max)

	b := Prepend(prefix, orig)
	got, err := io.ReadAll(b)
	require.NoError(t, err)
	assert.True(t, text == string(got), "read back %d bytes of %d", len(got), len(text))
	require.NoError(t, b.Close())
	assert.Equal(t, 1, orig.closed)
}

var errBroken = errors.New("broken")

type failAfter struct{ n int }

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errBroken
	}
	n := min(len(p), f.n)
	f.n -= n
	return n, nil
}

// TestReadKeepsBytesBeforeError: a read error returns the bytes read
// before it, and io.EOF is no error.
func TestReadKeepsBytesBeforeError(t *testing.T) {
	got, err := Read(&failAfter{n: 10}, Max)
	assert.ErrorIs(t, err, errBroken)
	assert.Len(t, got, 10)

	got, err = Read(strings.NewReader("short"), Max)
	assert.NoError(t, err)
	assert.Equal(t, "short", string(got))
}
