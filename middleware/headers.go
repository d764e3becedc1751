package middleware

import (
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/pacehttp/pace"
)

// maxSFInteger is the largest Integer a structured field can carry (RFC
// 9651 §3.3.1: at most 15 digits). Larger values are sent as this one.
const maxSFInteger = 999_999_999_999_999

// policy is one quota policy as the fields show it.
type policy struct {
	name string // serialized as an RFC 9651 String, quotes included
	q, w int64  // quota and window in whole seconds, as sent
}

// policiesOf returns the policies of a limit whose Quota in a fresh state
// is fresh. That is one, or one per part for a limit built by pace.All of
// two parts or more, named name-1, name-2, ….
func policiesOf(name string, fresh pace.Quota) []policy {
	if len(fresh.Parts) < 2 {
		q, w := policyWindow(fresh.Limit, fresh.Window)
		return []policy{{name: sfString(name), q: q, w: w}}
	}
	ps := make([]policy, len(fresh.Parts))
	for i, p := range fresh.Parts {
		q, w := policyWindow(p.Limit, p.Window)
		ps[i] = policy{name: sfString(name + "-" + strconv.Itoa(i+1)), q: q, w: w}
	}
	return ps
}

// policyWindow returns the q and w parameters for limit units per window.
// The draft's windows are whole seconds (§3.1.3). So a window that is not
// is rounded up to the next second, and the quota scaled with it, rounded
// down. q/w stays at or below the limit's rate. A token bucket of 10/s
// with a burst of 5 (limit 5 per 500ms) is q=10;w=1.
func policyWindow(limit int, window time.Duration) (q, w int64) {
	w = max(seconds(window), 1)
	if window <= 0 || time.Duration(w)*time.Second == window {
		return min(int64(limit), maxSFInteger), w
	}
	n := new(big.Int).Mul(big.NewInt(int64(limit)), big.NewInt(w))
	n.Mul(n, big.NewInt(int64(time.Second)))
	n.Quo(n, big.NewInt(int64(window)))
	if !n.IsInt64() || n.Int64() > maxSFInteger {
		return maxSFInteger, w
	}
	return n.Int64(), w
}

// policyField serializes the RateLimit-Policy field: a List of the
// policies' names with their q and w parameters (draft §3.1), e.g.
// `"default";q=100;w=60`.
func policyField(ps []policy) string {
	var b []byte
	for i, p := range ps {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, p.name...)
		b = append(b, ";q="...)
		b = strconv.AppendInt(b, p.q, 10)
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, p.w, 10)
	}
	return string(b)
}

// rateLimitField serializes the RateLimit field for q (draft §4.1), one
// item per policy, e.g. `"default";r=42;t=17`. r is the units remaining.
// t is the whole seconds, rounded up, until the quota is whole again. When
// nothing remains, it is the time until the next unit instead. Either way,
// a client that sends at most r requests in the next t seconds is not
// refused by this limit. No t exceeds maxT. A refusal passes its
// Retry-After, which must not name an earlier moment than the end of any
// effective window (draft §6). A shorter t keeps the promise above.
func rateLimitField(ps []policy, q pace.Quota, maxT int64) string {
	var arr [96]byte
	b := arr[:0]
	parts := []pace.Quota{q}
	if len(ps) > 1 && len(q.Parts) == len(ps) {
		parts = q.Parts
	}
	for i, p := range parts {
		if i > 0 {
			b = append(b, ", "...)
		}
		t := p.Reset
		if p.Remaining == 0 {
			t = p.Wait
		}
		b = append(b, ps[i].name...)
		b = append(b, ";r="...)
		b = strconv.AppendInt(b, min(int64(p.Remaining), maxSFInteger), 10)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, min(seconds(t), maxT), 10)
	}
	return string(b)
}

// retryAfter returns the delay to announce for a refusal that must wait d:
// d rounded up to whole seconds, and at least one second. A refusal always
// needs some wait, and "Retry-After: 0" invites an immediate retry.
func retryAfter(d time.Duration) int64 { return max(seconds(d), 1) }

// seconds returns d in whole seconds, rounded up, within [0, maxSFInteger].
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return min(s, maxSFInteger)
}

// sfString serializes s, printable ASCII, as an RFC 9651 String (§4.1.6).
func sfString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}
