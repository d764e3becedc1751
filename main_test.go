package pace

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// errOf returns the error of a Limiter.Wait, dropping its Permit.
func errOf(_ Permit, err error) error { return err }
