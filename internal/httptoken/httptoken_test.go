package httptoken

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestValid: field names as RFC 9110 §5.6.2 defines tokens; every byte
// outside tchar, a space, a colon, a control character, a non-ASCII byte,
// is refused, and so is the empty name.
func TestValid(t *testing.T) {
	for _, s := range []string{"Idempotency-Key", "X-API-Key", "a", "!#$%&'*+-.^_`|~09azAZ"} {
		assert.True(t, Valid(s), s)
	}
	for _, s := range []string{"", "a b", "X-Key:", "Idempotency-Key\n", "X\r\nEvil: 1", "Ä", "a\x00", "a\x7f", `"quoted"`, "(x)"} {
		assert.False(t, Valid(s), "%q", s)
	}
	for c := 0; c < 256; c++ {
		if Char(byte(c)) && (c <= ' ' || c >= 0x7f) {
			t.Errorf("Char(%#x) = true", c)
		}
	}
}
