package retry

import "time"

// DefaultThrottlePause is how long a whole key pauses after a 429 that
// carries no usable delay (no Retry-After or reset header), for a key that
// no configured limit paces, or whose adaptive rate was already cut and
// whose probe was throttled again (see pace.Transport, "Adaptive rate"); the
// first such 429 of a key a configured limit paces pauses it for
// [MinThrottlePause] instead and lowers its rate. Each consecutive
// throttle of the key (throttle.Permit's Strikes) doubles it, jittered, up to
// [DefaultBackoffMax]. pace.Transport.MaxRetryAfter caps it. With a
// [Policy].NewBackOff schedule the pause is that schedule's next wait
// instead, never under [DefaultThrottleBackoffInitial]. Five seconds follows
// the fix in env0/terraform-provider-env0#1127: a server that gives no hint
// usually counts in windows of seconds, and a shorter pause only buys
// another 429.
const DefaultThrottlePause = 5 * time.Second

// MinThrottlePause is the shortest pause of a key after a throttle whose
// server delay is zero or already past (Retry-After: 0, a past HTTP-date):
// the key still pauses this long and then sends one probe, so that a herd of
// waiting requests does not hit the server again at once (without it, 50
// waiting callers sent 54 requests in 4 ms). Each consecutive such
// throttle of the key (throttle.Permit's Strikes) doubles it, jittered, up to
// [DefaultBackoffMax]: a server that answers Retry-After: 0 again and again
// is overloaded, not keeping a schedule (RFC 9110 §10.2.3 allows the 0, not
// a retry storm). A throttle without any delay, a 429, pauses for
// DefaultThrottlePause instead, except the first one of a key a configured
// limit paces, which pauses for MinThrottlePause and lowers the key's rate
// (see pace.Transport, "Adaptive rate").
const MinThrottlePause = 50 * time.Millisecond
