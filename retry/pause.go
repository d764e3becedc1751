package retry

import "time"

// DefaultThrottlePause is how long a whole key pauses after a 429 that
// carries no usable delay (no Retry-After or reset header). It applies to a
// key that no configured limit paces. It applies too when a key's adaptive
// rate was already cut and its probe was throttled again (docs/pacing.md,
// "Slowing down by itself"). The first such 429 of a key a configured limit
// paces pauses it for MinThrottlePause instead, and lowers its rate. Each
// consecutive throttle of the key (throttle.Permit's Strikes) doubles it,
// jittered, up to DefaultBackoffMax. pace.Transport's MaxRetryAfter caps
// it. With a Policy.NewBackOff schedule the pause is that schedule's
// next wait instead, never under DefaultThrottleBackoffInitial. Five
// seconds follows the fix in env0/terraform-provider-env0#1127. A server
// that gives no hint usually counts in windows of seconds, and a shorter
// pause only buys another 429.
const DefaultThrottlePause = 5 * time.Second

// MinThrottlePause is the shortest pause of a key after a throttle whose
// server delay is zero or already past (Retry-After: 0, a past HTTP-date).
// The key still pauses this long and then sends one probe. So a herd of
// waiting requests does not hit the server again at once. Each consecutive
// such throttle of the key (throttle.Permit's Strikes) doubles it,
// jittered, up to DefaultBackoffMax. A server that answers
// Retry-After: 0 again and again is overloaded, not keeping a schedule.
// RFC 9110 §10.2.3 allows the 0, not a retry storm. A throttle without any
// delay, a 429, pauses for DefaultThrottlePause instead. The exception is
// the first one of a key a configured limit paces. It pauses for
// MinThrottlePause and lowers the key's rate (docs/pacing.md, "Slowing down
// by itself").
const MinThrottlePause = 50 * time.Millisecond
