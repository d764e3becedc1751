package pace

import "time"

// QuotaAt returns key's [Quota] at now: its limit, window, the units it may
// take now, and how long until it is whole again or may take one more unit.
// It books nothing and does not start tracking an unknown key, whose Quota
// is that of a fresh limit (or of the shared overflow limit when every key
// of its shard is paused or waited on, see [KeyedOptions].MaxKeys). With the zero Limit only a
// pause shows: Limit is 0 and Wait lasts until the pause ends. Safe for
// concurrent use.
func (k *Keyed) QuotaAt(now time.Time, key string) Quota {
	k.mustInit()
	var q Quota
	k.withCell(sinceEpoch(k.epoch, now), key, func(c *cell, pause, now int64) bool {
		q = k.quotaOf(c, pause, now)
		return false
	})
	return q
}

// AdmitAt is AllowAt that also reports key's Quota: it books n units for key
// if they may be used at now, never for later, and returns the Quota right
// after that decision, read under the same lock, so that no other call comes
// between the decision and the figures. On a refusal nothing is booked and
// the Quota's Wait says how long until one unit may go. It refuses while the
// key is paused and for n <= 0 or n above what the limit can ever grant at
// once. Safe for concurrent use.
//
// AdmitAt is meant for servers that answer excess at once (HTTP 429 with
// Retry-After and RateLimit headers) instead of making callers wait.
func (k *Keyed) AdmitAt(now time.Time, key string, n int) (q Quota, ok bool) {
	k.mustInit()
	k.withCell(sinceEpoch(k.epoch, now), key, func(c *cell, pause, now int64) bool {
		_, err := decideCell(k.alg, c, pause, now, n, 0, noDeadline, false)
		ok = err == nil
		q = k.quotaOf(c, pause, now)
		return ok
	})
	return q, ok
}

// quotaOf returns the Quota of c (nil: no limit) at now for a key paused
// until pause.
func (k *Keyed) quotaOf(c *cell, pause, now int64) Quota {
	from := max(now, pause)
	if c == nil {
		return Quota{Wait: time.Duration(from - now)}
	}
	return quotaAt(k.alg, c, now, from)
}
