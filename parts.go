package pace

// Part is one algorithm of a [Limit] with its parameters, as [Limit.Parts]
// reports them: what a limiter implemented outside this package (one whose
// state lives in Redis, say) needs to hold the same limit. It is a plain
// value, safe to copy.
type Part struct {
	// Algorithm names the algorithm, in the words of the constructors'
	// documentation: "token bucket" ([Bucket]), "leaky bucket" ([Leaky],
	// [LeakyWith]; GCRA), "fixed window" ([Fixed]), "sliding log"
	// ([Sliding]) or "sliding counter" ([SlidingApprox]).
	Algorithm string
	// Rate is the limit's rate: the refill rate of a token bucket, the
	// release rate of a leaky bucket, r.N per window r.Per for a window.
	Rate Rate
	// Burst is a token bucket's capacity; 0 for the other algorithms.
	Burst int
	// Leaky is a leaky bucket's queue, delay bound and slack; the zero
	// value for the other algorithms.
	Leaky LeakyOptions
}

// Parts returns the parts l holds at once: one for a Limit of one
// algorithm, one per limit for a Limit built by [All] (flattened, zero
// Limits skipped, in the order given), and nil for the zero Limit or a
// Limit that carries an error (see [Limit.Err]). The slice is new on every
// call; changing it changes nothing in l.
func (l Limit) Parts() []Part {
	if l.err != nil || l.alg == nil {
		return nil
	}
	if c, ok := l.alg.(*composite); ok {
		ps := make([]Part, 0, len(c.parts))
		for _, a := range c.parts {
			ps = append(ps, partOf(a))
		}
		return ps
	}
	return []Part{partOf(l.alg)}
}

// partOf describes one algorithm that is not a composite.
func partOf(a algorithm) Part {
	switch a := a.(type) {
	case *bucketAlg:
		return Part{Algorithm: "token bucket", Rate: a.rate, Burst: a.burst}
	case *leakyAlg:
		return Part{Algorithm: "leaky bucket", Rate: a.rate, Leaky: a.o}
	case *fixedWindow:
		return Part{Algorithm: "fixed window", Rate: a.r}
	case *slidingLog:
		return Part{Algorithm: "sliding log", Rate: a.r}
	case *slidingCounter:
		return Part{Algorithm: "sliding counter", Rate: a.r}
	}
	return Part{Algorithm: a.String()} // an algorithm this switch does not know yet
}
