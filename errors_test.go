package pace

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pacehttp/pace/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorText pins the text of errors a new user reads first: no stray
// space before the colon when the value prints as nothing, a type name
// rather than a struct dump, no empty key and no doubled "pace:".
func TestErrorText(t *testing.T) {
	tb, err := NewShaper(TokenBucket(PerSecond(1), 1))
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKeyed(TokenBucket(PerSecond(1), 1), KeyedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"empty host", (&Transport{Limits: Hosts{"": {Limit: TokenBucket(PerSecond(1), 1)}}}).Validate(),
			`pace: invalid Limits[""]: empty host; use "*" for the default`},
		{"Limiter with Limits", (&Transport{Limiter: k, Limits: Hosts{"*": {}}}).Validate(),
			`pace: invalid Limiter *pace.Keyed: set together with Limits; use one`},
		{"nil value", configErr("X", nil, "must be set"), `pace: invalid X: must be set`},
		{"value kept", configErr("Burst", 0, "must be at least 1"), `pace: invalid Burst 0: must be at least 1`},
		{"single-key limiter", tb.Wait(context.Background(), -1), `pace: invalid maxWait -1ns: must not be negative (0 sets no bound)`},
		{"host key wait", &WaitError{Key: "api.test", Delay: 5 * time.Second, Err: ErrWaitTooLong, hostKey: true},
			`pace: "api.test": wait 5s: rate limited: wait too long`},
		// A key not marked as a host (a Keyed's, Transport.Key's) is shown
		// as the first 12 hex digits of its SHA-256:
		// printf k | sha256sum = 8254c329a92850f6d539dd376f4816ee2764517da5e0235514af433164480d7a.
		{"foreign error kept whole", &WaitError{Key: "k", Err: context.Canceled}, `pace: key~8254c329a928: context canceled`},
		{"nil Err", &WaitError{}, `pace: <nil>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error")
			}
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
	// The shortened text changes nothing for errors.Is.
	if err := tb.Wait(context.Background(), -1); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Wait(-1) = %v, want ErrInvalidConfig", err)
	}
}

// TestConfigErrorValueText: a ConfigError prints a string value quoted, so
// that a header name holding a newline cannot add a line to a log, and a
// duration as a time.Duration, which its Value is.
func TestConfigErrorValueText(t *testing.T) {
	tests := []struct {
		name  string
		tr    *Transport
		value any
		want  string
	}{
		{"header name with a newline", &Transport{Retry: retry.Policy{IdempotencyHeader: "X-Key\nEvil: 1"}}, "X-Key\nEvil: 1",
			`pace: invalid Retry.IdempotencyHeader "X-Key\nEvil: 1": not a header name`},
		{"secret header with a space", &Transport{SecretHeaders: []string{"a b"}}, "a b",
			`pace: invalid SecretHeaders[0] "a b": not a header name`},
		{"MaxWait", &Transport{MaxWait: -1500 * time.Millisecond}, -1500 * time.Millisecond,
			`pace: invalid MaxWait -1.5s: must not be negative`},
		{"MaxRetryAfter", &Transport{MaxRetryAfter: -1}, time.Duration(-1),
			`pace: invalid MaxRetryAfter -1ns: must not be negative`},
		{"host with a newline", &Transport{Limits: Hosts{"api.example\n": {}}}, "api.example\n",
			`pace: invalid Limits["api.example\n"] "api.example\n": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.tr.Validate()
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.value, ce.Value)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "Error() = %q, want it to start with %q", err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
	// Any other value whose text is not printable is quoted too.
	assert.Equal(t, `pace: invalid X "[a\nb]": why`, configErr("X", []string{"a\nb"}, "why").Error())
}
