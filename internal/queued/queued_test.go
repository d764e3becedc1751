package queued

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWith(t *testing.T) {
	assert.False(t, Is(context.Background()))
	ctx := With(context.Background())
	assert.True(t, Is(ctx))
	type other struct{}
	assert.True(t, Is(context.WithValue(ctx, other{}, 1)), "a derived context stays marked")
}
