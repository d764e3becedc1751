package pace

import "github.com/pacehttp/pace/throttle"

// Parts returns the Limits of one algorithm each that l holds at once. For
// a Limit built by [All], they are its parts: flattened, zero Limits
// skipped, in the order given. For a Limit of one algorithm, it is l
// itself. It is nil for the zero Limit, or a Limit that carries an error
// (see [Limit.Err]). With [Limit.Params] it tells a limiter implemented
// outside this package what to hold (one whose state lives in Redis, say).
// The slice is new on every call.
func (l Limit) Parts() []Limit {
	if l.err != nil || l.alg == nil {
		return nil
	}
	algs := flatten(l.alg)
	ps := make([]Limit, len(algs))
	for i, a := range algs {
		ps[i] = Limit{alg: a}
	}
	return ps
}

// Params describes a Limit of one algorithm (see [Limit.Parts]):
//
//   - its algorithm: [throttle.TokenBucket] for a Limit of [TokenBucket],
//     and so on for [LeakyBucket], [FixedWindow], [SlidingLog] and
//     [SlidingCounter];
//   - its rate: a token bucket's refill rate, a leaky bucket's release
//     rate, a window's r.N per r.Per;
//   - a token bucket's burst (0 for the others);
//   - a leaky bucket's options (the zero value for the others).
//
// alg is the zero Algorithm for the zero Limit, a Limit that carries an
// error, and a Limit built by [All], even of one part: read its parts.
func (l Limit) Params() (alg throttle.Algorithm, r Rate, burst int, leaky LeakyOptions) {
	if l.err != nil || l.alg == nil || partsOf(l.alg) != nil {
		return 0, Rate{}, 0, LeakyOptions{}
	}
	return l.alg.params()
}
