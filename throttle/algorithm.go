package throttle

// Algorithm names the algorithm of a limit of one algorithm. pace.Limit's
// Params method reports it to a limiter implemented outside package pace,
// which holds the limit's state itself (in Redis, say). The zero Algorithm
// names none: the zero limit, a limit that carries an error, or a limit of
// several parts.
type Algorithm uint8

// The algorithms of package pace's Limit constructors of the same names.
const (
	// TokenBucket is a bucket of a burst of units that refills at a rate.
	TokenBucket Algorithm = iota + 1
	// LeakyBucket releases units at a steady rate; it is a GCRA (ITU-T
	// I.371), with a queue bound, a delay bound and a slack.
	LeakyBucket
	// FixedWindow counts units per window aligned to the clock.
	FixedWindow
	// SlidingLog counts the units of the last period, each at its instant.
	SlidingLog
	// SlidingCounter estimates the units of the last period from two fixed
	// windows, as Cloudflare's rate limiting does.
	SlidingCounter
)

// String returns a in the words of its constructor's documentation:
// "token bucket", "leaky bucket", "fixed window", "sliding log" or
// "sliding counter". It is "" for the zero Algorithm and for values
// outside these.
func (a Algorithm) String() string {
	switch a {
	case TokenBucket:
		return "token bucket"
	case LeakyBucket:
		return "leaky bucket"
	case FixedWindow:
		return "fixed window"
	case SlidingLog:
		return "sliding log"
	case SlidingCounter:
		return "sliding counter"
	}
	return ""
}
