package retrydecide

import (
	"math"
	"time"

	"github.com/pacehttp/pace/internal/httptoken"
	"github.com/pacehttp/pace/retry"
)

// FieldError is one invalid setting of a retry.Policy. Field is relative
// to the Policy, such as "Statuses" or "Budget.TTL". The Transport turns it
// into a *pace.ConfigError.
type FieldError struct {
	Field  string
	Value  any
	Reason string
}

func (e *FieldError) Error() string { return "invalid " + e.Field + ": " + e.Reason }

// Validate reports the first invalid setting of p, or nil: a negative
// MaxAttempts, a status that is not an error status (4xx or 5xx: a success
// or a redirect is never retried, so listing one is a mistake), an
// idempotency header name that is not an HTTP token, an unknown Jitter, or
// an invalid Budget.
func Validate(p *retry.Policy) *FieldError {
	if p.MaxAttempts < 0 {
		return &FieldError{"MaxAttempts", p.MaxAttempts, "must not be negative"}
	}
	for _, code := range p.Statuses {
		if code < 400 || code > 599 {
			return &FieldError{"Statuses", code, "not an HTTP error status (400..599); only error responses are retried"}
		}
	}
	if h := p.IdempotencyHeader; h != "" {
		if why := HeaderNameProblem(h); why != "" {
			return &FieldError{"IdempotencyHeader", h, why}
		}
	}
	if j := p.Jitter; j < retry.FullJitter || j > retry.NoJitter {
		return &FieldError{"Jitter", j, "unknown jitter strategy"}
	}
	return validateBudget(p.Budget)
}

// HeaderNameProblem says why name is not a header field name, a token of
// RFC 9110 §5.6.2 (§5.1), or returns "" when it is one.
func HeaderNameProblem(name string) string {
	switch {
	case name == "":
		return "empty header name"
	case !httptoken.Valid(name):
		return "not a header name: a token of RFC 9110 §5.6.2 (letters, digits and !#$%&'*+-.^_`|~), no space, colon or control character"
	}
	return ""
}

// validateBudget reports the first invalid setting of b.
func validateBudget(b retry.Budget) *FieldError {
	switch {
	case b.TTL != 0 && (b.TTL < time.Second || b.TTL > time.Minute):
		return &FieldError{"Budget.TTL", b.TTL, "must be within [1s, 60s], or 0 for the default"}
	case b.MinRetriesPerSec > 1_000_000:
		return &FieldError{"Budget.MinRetriesPerSec", b.MinRetriesPerSec, "must be at most 1,000,000"}
	case math.IsNaN(b.PercentCanRetry) || b.PercentCanRetry > 1000:
		return &FieldError{"Budget.PercentCanRetry", b.PercentCanRetry, "must be at most 1000, negative for none, or 0 for the default"}
	case b.MaxKeys < 0:
		return &FieldError{"Budget.MaxKeys", b.MaxKeys, "must not be negative"}
	}
	return nil
}
