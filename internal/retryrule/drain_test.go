package retryrule

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
)

// countingBody counts the bytes read from it and its closes.
type countingBody struct {
	r      io.Reader
	read   int64
	closed int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *countingBody) Close() error { b.closed++; return nil }

func TestDrain(t *testing.T) {
	tests := []struct {
		name     string
		size     int
		wantRead int64
	}{
		{"short body read to the end", 10, 10},
		{"10 KiB body read to the end", 10 << 10, 10 << 10},
		{"long body read only up to DrainMax", 1 << 20, DrainMax},
		{"empty", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := &countingBody{r: bytes.NewReader(make([]byte, tt.size))}
			Drain(body)
			assert.Equal(t, tt.wantRead, body.read)
			assert.Equal(t, 1, body.closed)
		})
	}
	Drain(nil) // must not panic
}
