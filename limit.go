package pace

// Limit describes one rate limit: an algorithm and its parameters, built by
// [TokenBucket], [LeakyBucket], [FixedWindow], [SlidingLog],
// [SlidingCounter] or [All]. It is a value that holds no state; [NewShaper]
// turns it into a limiter of one key, and [NewKeyed] and the [Transport]
// into per-key limiters. A Limit built from invalid parameters
// carries its error, which Err returns and which every constructor that
// takes the Limit returns in turn. The zero Limit means "no limit".
type Limit struct {
	alg algorithm
	err error
}

// Err returns the error that makes l unusable, or nil: a [*ConfigError],
// or for a Limit built by [All] an error that wraps a part's. Either way it
// matches [ErrInvalidConfig].
func (l Limit) Err() error { return l.err }

// IsZero reports whether l is the zero Limit, which means no limit.
func (l Limit) IsZero() bool { return l.alg == nil && l.err == nil }

// String describes l, e.g. "token bucket 600/1m0s burst 20".
func (l Limit) String() string {
	switch {
	case l.err != nil:
		return "invalid limit: " + l.err.Error()
	case l.alg == nil:
		return "no limit"
	}
	return l.alg.String()
}

// newLimit returns a Limit of alg, or one carrying err.
func newLimit(alg algorithm, err error) Limit {
	if err != nil {
		return Limit{err: err}
	}
	return Limit{alg: alg}
}
