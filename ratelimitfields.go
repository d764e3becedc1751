package pace

import "time"

// rateLimitItem is one service limit of the IETF RateLimit field
// (draft-ietf-httpapi-ratelimit-headers §4.1): the policy it belongs to,
// the quota units left (r) and, when hasReset, the effective window in which
// the client may use no more than that (t).
type rateLimitItem struct {
	policy    string
	remaining int64
	reset     time.Duration
	hasReset  bool
}

// rateLimitPolicy is one quota policy of the IETF RateLimit-Policy field
// (draft §3.1): the quota q, its unit (qu, "requests" when absent) and, when
// window > 0, the window w. It is information for pacing, not a delay.
type rateLimitPolicy struct {
	name   string
	quota  int64
	unit   string
	window time.Duration
}

// rateLimitDelay returns the wait implied by the RateLimit items: the
// longest effective window (t) among the policies whose quota is spent
// (r=0). On a 429 or 503 (throttled) where no item says r=0, the server
// refused for a policy it reports as not spent; the wait is then the longest
// t of all items, the first moment by which every announced window has
// ended. ok is false when no item qualifies.
func rateLimitDelay(items []rateLimitItem, throttled bool) (time.Duration, bool) {
	var spent, all time.Duration
	var spentOK, allOK bool
	for _, it := range items {
		if !it.hasReset {
			continue
		}
		if it.remaining == 0 {
			spent, spentOK = max(spent, it.reset), true
		}
		all, allOK = max(all, it.reset), true
	}
	switch {
	case spentOK:
		return spent, true
	case throttled && allOK:
		return all, true
	}
	return 0, false
}

// parseRateLimit parses the RateLimit field lines (draft-ietf-httpapi-
// ratelimit-headers §4, an RFC 9651 List split over any number of lines,
// e.g. `"default";r=0;t=30`). Each item names its policy with a String or a
// Token; r (required) and t (optional) must be non-negative Integers, other
// parameters are ignored. A malformed field is ignored as a whole (ok ==
// false), as draft §7 requires.
func parseRateLimit(lines []string) ([]rateLimitItem, bool) {
	members, ok := parseSFList(lines)
	if !ok {
		return nil, false
	}
	items := make([]rateLimitItem, 0, len(members))
	for _, m := range members {
		if m.kind != sfString && m.kind != sfToken {
			return nil, false
		}
		it := rateLimitItem{policy: m.str, remaining: -1}
		for _, p := range m.params {
			switch p.key {
			case "r":
				if p.kind != sfInteger || p.num < 0 {
					return nil, false
				}
				it.remaining = p.num
			case "t":
				if p.kind != sfInteger || p.num < 0 {
					return nil, false
				}
				it.reset, it.hasReset = secondsDuration(uint64(p.num)), true
			}
		}
		if it.remaining < 0 { // r is required
			return nil, false
		}
		items = append(items, it)
	}
	return items, true
}

// parseRateLimitPolicy parses the RateLimit-Policy field lines (draft §3,
// e.g. `"burst";q=100;w=60,"daily";q=1000;w=86400`): q (required) a
// non-negative Integer, w (optional) a positive Integer of seconds, qu
// (optional) a String. A malformed field is ignored as a whole (ok == false).
// The policies are information (draft §7: "MAY be ignored"); serverDelay
// does not use them.
func parseRateLimitPolicy(lines []string) ([]rateLimitPolicy, bool) {
	members, ok := parseSFList(lines)
	if !ok {
		return nil, false
	}
	pols := make([]rateLimitPolicy, 0, len(members))
	for _, m := range members {
		if m.kind != sfString && m.kind != sfToken {
			return nil, false
		}
		p := rateLimitPolicy{name: m.str, quota: -1, unit: "requests"}
		for _, prm := range m.params {
			switch prm.key {
			case "q":
				if prm.kind != sfInteger || prm.num < 0 {
					return nil, false
				}
				p.quota = prm.num
			case "w":
				if prm.kind != sfInteger || prm.num <= 0 {
					return nil, false
				}
				p.window = secondsDuration(uint64(prm.num))
			case "qu":
				if prm.kind != sfString {
					return nil, false
				}
				p.unit = prm.str
			}
		}
		if p.quota < 0 { // q is required
			return nil, false
		}
		pols = append(pols, p)
	}
	return pols, true
}
