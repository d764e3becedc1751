package retryrule

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWithHandBack(t *testing.T) {
	_, ok := HandBack(context.Background())
	assert.False(t, ok)
	want := Pauses{First: time.Second, Max: time.Minute}
	ctx := WithHandBack(context.Background(), want)
	p, ok := HandBack(ctx)
	assert.True(t, ok)
	assert.Equal(t, want, p)
	type other struct{}
	p, ok = HandBack(context.WithValue(ctx, other{}, 1))
	assert.True(t, ok, "a derived context stays marked")
	assert.Equal(t, want, p)
	_, ok = HandBack(WithHandBack(context.Background(), Pauses{}))
	assert.True(t, ok, "marked with the Transport's own pauses")
}
