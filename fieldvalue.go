package pace

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// headerValue returns the first value of the canonical key in h, or "".
// Unlike http.Header.Get it never canonicalizes, so it never allocates.
func headerValue(h http.Header, canonicalKey string) string {
	if vs := h[canonicalKey]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// maxDurationSeconds is the largest whole number of seconds a time.Duration
// can hold.
const maxDurationSeconds = math.MaxInt64 / int64(time.Second)

// dateTolerance is how far, beyond the one-second resolution of the Date
// header, the Date may lie from the local clock and still count as
// agreeing with it. It is room for the time between the server stamping
// the response and the client receiving it. See dateDelay.
const dateTolerance = 100 * time.Millisecond

// maxDateSkew is the largest distance between a response's Date and the
// local clock that dateDelay takes for clock skew. A Date further off is
// broken (a device whose clock was never set says 1970) and is ignored.
const maxDateSkew = 24 * time.Hour

// dateDelay returns how long to wait, from now, for the absolute instant t
// named by a server. Its response carried serverDate (the zero Time when it
// had no valid Date header).
//
// RFC 9110 §10.2.3 makes an HTTP-date relative to the server's clock. The
// response's Date (§6.6.1) is that clock when the response was generated,
// truncated to the second. An HTTP-date has a resolution of one second, so
// a Date stamped at 12:00:00.9 reads 12:00:00. The rule:
//
//   - No Date, or a Date more than maxDateSkew (a day) from now: the Date
//     is absent or broken, not a skew to correct for. Wait t − now.
//   - A Date that agrees with the local clock within its resolution:
//     serverDate in (now − 1s − dateTolerance, now + dateTolerance]. The
//     two clocks agree as far as the Date can tell, and the Date is the
//     local clock truncated. Waiting t − serverDate would leave up to a
//     second after t. So trust the local clock and wait t − now: the retry
//     leaves at t, never before it and not late.
//   - A Date further off, by less than a day: the server's clock is
//     skewed. Wait t − serverDate from receipt. Then the server's clock
//     reads at least t when the retry arrives, whatever the skew, because
//     transit time only adds to it. The wait is never shorter than t − now
//     either. So a server clock ahead of ours does not bring the retry
//     before t by our clock.
//
// The result is never negative: a past instant means 0, retry now.
func dateDelay(t, now, serverDate time.Time) time.Duration {
	d := max(t.Sub(now), 0) // Sub saturates instead of overflowing
	if serverDate.IsZero() {
		return d
	}
	behind := now.Sub(serverDate) // how far the Date is behind our clock; saturates
	if behind > maxDateSkew || behind < -maxDateSkew {
		return d // a broken Date: ignored
	}
	if -dateTolerance <= behind && behind < time.Second+dateTolerance {
		return d // the Date agrees with our clock within its resolution
	}
	return max(d, t.Sub(serverDate))
}

// responseDate returns the response's Date header (RFC 9110 §6.6.1),
// received at now, or the zero Time when it is missing or malformed.
func responseDate(h http.Header, now time.Time) time.Time {
	t, _ := parseHTTPDate(trimOWS(headerValue(h, "Date")), now)
	return t
}

// parseHTTPDate parses an HTTP-date received at now, in the three formats
// of RFC 9110 §5.6.7, tried in the order http.ParseTime tries them, with
// two corrections:
//
//   - The zone must be GMT. time.Parse accepts any zone abbreviation in the
//     RFC 850 form and reads, say, "PST" with the offset of the machine's
//     local zone, which would make the result depend on where the client
//     runs.
//   - A two-digit RFC 850 year is read as §5.6.7 requires: the year with
//     those digits in now's century, or the century before when that is
//     more than 50 years after now. (time.Parse maps 69–99 to the 1900s
//     and 00–68 to the 2000s whatever the date.)
//
// The zero Time and false when v is not a valid HTTP-date.
func parseHTTPDate(v string, now time.Time) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(http.TimeFormat, v) // IMF-fixdate
	rfc850 := false
	if err != nil {
		t, err = time.Parse(time.RFC850, v)
		rfc850 = err == nil
	}
	if err != nil {
		t, err = time.Parse(time.ANSIC, v) // asctime
	}
	if err != nil {
		return time.Time{}, false
	}
	if name, off := t.Zone(); off != 0 || (name != "UTC" && name != "GMT") {
		return time.Time{}, false
	}
	if rfc850 {
		ref := now.UTC().Year()
		year := ref - ref%100 + t.Year()%100
		if year > ref+50 {
			year -= 100
		}
		t = t.AddDate(year-t.Year(), 0, 0)
	}
	return t.UTC(), true
}

// secondsDuration converts whole seconds to a Duration, saturating.
func secondsDuration(secs uint64) time.Duration {
	if secs > uint64(maxDurationSeconds) {
		return math.MaxInt64
	}
	return time.Duration(secs) * time.Second
}

// parseDigits parses 1*DIGIT as an unsigned integer, saturating at
// math.MaxUint64 instead of failing on overflow. ok is false when v is empty
// or holds anything but ASCII digits.
func parseDigits(v string) (uint64, bool) {
	if v == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !isDigit(c) {
			return 0, false
		}
		if n > (math.MaxUint64-9)/10 {
			n = math.MaxUint64 // keep scanning so garbage after digits still fails
			continue
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// parseDecimal parses 1*DIGIT [ "." 1*DIGIT ] as a count of unit, rounding
// a fraction finer than a nanosecond up and saturating at the largest
// Duration. unit must be a positive power of ten nanoseconds up to a second.
func parseDecimal(v string, unit time.Duration) (time.Duration, bool) {
	intPart, frac, hasFrac := strings.Cut(v, ".")
	whole, ok := parseDigits(intPart)
	if !ok {
		return 0, false
	}
	if hasFrac {
		if _, ok := parseDigits(frac); !ok {
			return 0, false
		}
	}
	if whole > uint64(math.MaxInt64/int64(unit)) {
		return math.MaxInt64, true
	}
	d := time.Duration(whole) * unit
	// The fraction, in nanoseconds: unit has len(digits of unit)-1 decimal
	// places of nanoseconds, e.g. 6 for a millisecond.
	var fracNs int64
	for scale, i := int64(unit)/10, 0; i < len(frac); i++ {
		digit := int64(frac[i] - '0')
		if scale == 0 {
			if digit != 0 { // finer than a nanosecond: round up
				fracNs++
				break
			}
			continue
		}
		fracNs += digit * scale
		scale /= 10
	}
	if d > math.MaxInt64-time.Duration(fracNs) {
		return math.MaxInt64, true
	}
	return d + time.Duration(fracNs), true
}

// trimOWS removes the spaces and horizontal tabs around v (OWS, RFC 9110
// §5.6.3) and nothing else.
func trimOWS(v string) string { return strings.Trim(v, " \t") }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
