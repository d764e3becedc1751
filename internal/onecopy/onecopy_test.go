package onecopy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func library(t *testing.T) []File {
	t.Helper()
	files, err := Library("../..")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// TestOneDrain: only internal/discard drains a body before closing it.
func TestOneDrain(t *testing.T) {
	files := library(t)
	var at []string
	at = append(at, Calls(files, "io", "CopyN", "io.Discard")...)
	at = append(at, Calls(files, "io", "Copy", "io.Discard")...)
	assert.Equal(t, []string{"internal/discard/discard.go:20"}, at)
}

// TestOneConfigErrorConstructor: the root package's configErr is the only
// shorthand for a *pace.ConfigError; the other packages build the root's
// type themselves, so errors.As(err, new(*pace.ConfigError)) sees them all.
func TestOneConfigErrorConstructor(t *testing.T) {
	assert.Equal(t, []string{"errors.go:configErr"}, Constructors(library(t), "ConfigError"))
}
