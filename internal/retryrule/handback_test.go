package retryrule

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWithHandBack(t *testing.T) {
	assert.False(t, HandBack(context.Background()))
	ctx := WithHandBack(context.Background())
	assert.True(t, HandBack(ctx))
	type other struct{}
	assert.True(t, HandBack(context.WithValue(ctx, other{}, 1)), "a derived context stays marked")
}
