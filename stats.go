package pace

import (
	"time"
)

// Stats is a snapshot of what a [Transport] did for one key, counted since
// its first request: the figures of [Transport.Stats]. Counts are of
// RoundTrip calls (Requests, GiveUps) and of attempts (the rest).
type Stats struct {
	// Key is the key (see [Transport].Key), or "" for the keys past the
	// first 4,096, counted together (see [Transport].Stats). A key from
	// Transport.Key is held whole and may be a secret, such as an API key.
	// Do not log or export it as it is (label with Host, or a fingerprint).
	Key string
	// Host is the host of the key's first request, in the form [Hosts]
	// matches it (see Transport.Key), or "" for the keys past the first
	// 4,096. Label with it where the key itself is a secret, such as an API
	// key.
	Host string
	// Requests counts RoundTrip calls; Admitted the attempts the key's
	// limiter let go (a call's retries included).
	Requests, Admitted int64
	// Waits counts the attempts that waited for the key's pause or limiter
	// before leaving, and Waited is their total wait. The wait a request
	// sleeps between its own attempts (a server's delay, a backoff) is not
	// counted there.
	Waits  int64
	Waited time.Duration
	// Retries counts the attempts sent again. A request that waited behind
	// its key's probe and met its throttle sent nothing more, and counts
	// none for it. Throttles counts the answers that paused the key (see
	// [Throttled]). GiveUps counts the calls that
	// ended on a failure that could have been retried, as [EventGiveUp]
	// reports them. The reasons are attempts, budget, the server's delay too
	// long, the deadline, and others (see [retry.Reason]). With MaxAttempts 1
	// (Retry.MaxAttempts or the host's) the Transport makes no retries. So
	// spending that attempt is no give-up and is not counted. Under
	// retryable.Install the retryablehttp.Client makes the retries. A call it
	// retries to success is not a give-up of the Transport's. ErrorOnGiveUp
	// still returns such a final response as an [*AttemptsError]
	// (retry.ReasonAttempts).
	Retries, Throttles, GiveUps int64
	// Pace is the spacing between the key's requests in force now, 0 when
	// nothing spaces them. PaceSource says where it comes from:
	//
	//   - "configured": the key's limit, Rate.Interval;
	//   - "quota": the server's quota headers, slower than the limit;
	//   - "adaptive": the rate the key slowed to after throttles without a
	//     hint (see [Transport]);
	//   - "" when there is none.
	//
	// A custom Limiter reports none.
	Pace       time.Duration
	PaceSource string
}

// Stats returns a snapshot of every key's [Stats], in the order the keys
// were first seen. If any key was past the first 4,096, the figures of
// those keys together come last, under the empty Key. Each figure is read
// atomically, but the figures of one key are not read at one instant. It
// returns nil when the Transport's configuration is invalid. The read
// costs a few atomic loads per key. For the pace it briefly holds the
// key's lock in its [Keyed] store. It is safe for concurrent use.
func (t *Transport) Stats() []Stats {
	s, err := t.init()
	if err != nil {
		return nil
	}
	tab := &s.keys
	tab.mu.Lock()
	keys := tab.keys
	tab.mu.Unlock()
	out := make([]Stats, 0, len(keys)+1)
	now := time.Now()
	for _, ks := range keys {
		out = append(out, ks.snapshot(now))
	}
	if tab.over.requests.Load() > 0 {
		out = append(out, tab.over.snapshot(now))
	}
	return out
}

// snapshot reads ks at now.
func (ks *keyEntry) snapshot(now time.Time) Stats {
	st := Stats{
		Key: ks.key, Host: ks.host,
		Requests: ks.requests.Load(), Admitted: ks.admitted.Load(),
		Waits: ks.waits.Load(), Waited: time.Duration(ks.waited.Load()),
		Retries: ks.retries.Load(), Throttles: ks.throttles.Load(), GiveUps: ks.giveUps.Load(),
	}
	if k, ok := ks.lim.(*Keyed); ok && ks.key != "" {
		pace, source := k.paceAt(now, ks.key)
		st.Pace, st.PaceSource = time.Duration(pace), source
	}
	return st
}

// paceAt returns the spacing in force for key at now, in nanoseconds, and
// where it comes from (see Stats.PaceSource). It is the slowest of the
// key's limit (algorithm.interval), its quota pace and its adaptive rate
// (throttle.paceAt). It returns 0, "" when nothing spaces the key.
func (k *Keyed) paceAt(now time.Time, key string) (pace int64, source string) {
	e := k.open(sinceEpoch(k.epoch, now), key, false)
	defer e.close(false)
	if k.alg != nil {
		pace, source = k.alg.interval(), "configured"
	}
	if e.st != nil {
		if i, adaptive := e.st.th.paceAt(e.now); i > pace {
			pace, source = i, "quota"
			if adaptive {
				source = "adaptive"
			}
		}
	}
	return pace, source
}
