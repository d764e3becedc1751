package pace

import (
	"context"
	"errors"
	"testing"
	"time"
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
		{"single-key limiter", tb.Wait(context.Background(), 0), `pace: unit count must be positive`},
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
	if err := tb.Wait(context.Background(), 0); !errors.Is(err, ErrBadCount) {
		t.Errorf("Wait(0) = %v, want ErrBadCount", err)
	}
}
