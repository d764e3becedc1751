package pace

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/pacehttp/pace/throttle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// errOf returns the error of a Limiter.Wait, dropping its Permit.
func errOf(_ throttle.Permit, err error) error { return err }
