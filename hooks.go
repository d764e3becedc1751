package pace

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pacehttp/pace/internal/redact"
	"github.com/pacehttp/pace/retry"
)

// EventKind says what an [Event] reports.
type EventKind int

const (
	// EventWait: a request waited for its key's cooldown or its limiter
	// before an attempt. Delay is how long it waited; Reason is
	// [retry.ReasonCooldown] or [retry.ReasonLimit].
	EventWait EventKind = iota + 1
	// EventThrottle: the server throttled the key (see [Throttled]) and
	// the whole key is paused for Delay from the event.
	EventThrottle
	// EventRetry: attempt Attempt failed (StatusCode or Err) and the
	// request will be sent again after Delay. Reason is [retry.ReasonServerDelay]
	// when the server chose the delay, else [retry.ReasonBackoff].
	EventRetry
	// EventGiveUp: attempt Attempt failed in a way that could have been
	// retried, and the Transport stops. Reason says why. Delay is the wait that
	// was refused (for example the server's Retry-After), if any. A call
	// allowed one attempt makes no retries: Retry.MaxAttempts 1, or its host's
	// [Host].MaxAttempts 1. It never gives up for retry.ReasonAttempts (see
	// [Stats].GiveUps).
	EventGiveUp
	// EventPortMismatch: the request's host matches no key of
	// [Transport].Limits, but a key names the same host with another port
	// or none. Err is a [*ConfigError] naming that key and the request's
	// host. It is reported once per key, the first time.
	EventPortMismatch
)

// String returns "wait", "throttle", "retry", "give-up" or
// "port-mismatch", and "unknown" for any other value.
func (k EventKind) String() string {
	switch k {
	case EventWait:
		return "wait"
	case EventThrottle:
		return "throttle"
	case EventRetry:
		return "retry"
	case EventGiveUp:
		return "give-up"
	case EventPortMismatch:
		return "port-mismatch"
	}
	return "unknown"
}

// Event is what the Transport tells [Transport].OnEvent and its Logger
// about one request: waits, throttles, retries, give-ups and port
// mismatches. Fields that do
// not apply to a kind are zero. It is a struct so that fields can be added.
// An Event is built only when OnEvent or Logger is set.
type Event struct {
	Kind    EventKind     // what happened
	Reason  retry.Reason  // why; see the kinds for which reasons each carries
	Key     string        // the request's key (by default its host); a key from Transport.Key may be a secret, which the Logger shows only as a fingerprint
	Request *http.Request // the caller's request; do not modify it
	Attempt int           // the attempt concerned, counting from 1; 0 for EventPortMismatch
	// Delay is the wait the event is about (see the kinds).
	Delay time.Duration
	// StatusCode is the status of the attempt's response, 0 if there was
	// none.
	StatusCode int
	// Err is the attempt's transport error, or the error returned to the
	// caller for EventGiveUp, if any.
	Err error
}

// loggedHeaders are the request headers whose values the Logger shows:
// content negotiation, caching and conditions, sizes, the client's name,
// request and trace IDs, and the idempotency key (a per-request ID, no
// credential). Every other header is logged by name only, its value
// "[redacted]". Credentials come under too many names for any list of
// secret names or words to hold them all: Authorization, Cookie,
// X-Api-Key, Ocp-Apim-Subscription-Key, X-Access-Key, Private-Token,
// X-Amz-Security-Token, vendors' own. So the list names what is safe
// instead. Transport.SecretHeaders takes names off it.
var loggedHeaders = []string{
	"Accept", "Accept-Encoding", "Accept-Language", "Cache-Control",
	"Content-Encoding", "Content-Language", "Content-Length", "Content-Type",
	"Idempotency-Key", "If-Match", "If-Modified-Since", "If-None-Match",
	"If-Range", "If-Unmodified-Since", "Pragma", "Range", "Traceparent",
	"Tracestate", "User-Agent", "X-Correlation-Id", "X-Request-Id",
}

// redacted replaces the values of headers not in loggedHeaders in logs.
const redacted = "[redacted]"

// observer sends events to OnEvent and the Logger. It is built once per
// Transport.
type observer struct {
	onEvent func(Event)
	logger  *slog.Logger
	logged  map[string]bool // canonical names of the headers whose values are logged
	hide    bool            // Transport.HidePath: URLs are logged without their path
}

// newObserver returns the observer for onEvent and logger, or nil when
// both are nil. The headers in secret are never logged with their value;
// with hidePath, no URL's path is logged.
func newObserver(onEvent func(Event), logger *slog.Logger, secret []string, hidePath bool) *observer {
	if onEvent == nil && logger == nil {
		return nil
	}
	o := &observer{onEvent: onEvent, logger: logger, logged: make(map[string]bool, len(loggedHeaders)), hide: hidePath}
	for _, h := range loggedHeaders {
		o.logged[h] = true
	}
	for _, h := range secret {
		delete(o.logged, http.CanonicalHeaderKey(h))
	}
	return o
}

// isSecret reports whether header name's value is kept out of logs: all
// but loggedHeaders.
func (o *observer) isSecret(name string) bool {
	return !o.logged[http.CanonicalHeaderKey(name)]
}

// emit delivers ev. A nil observer does nothing; callers check for nil
// before building the Event, so that the success path builds nothing.
// hostKey says whether ev.Key is the request's host, which the log may
// show (see keyText).
func (o *observer) emit(ctx context.Context, ev Event, hostKey bool) {
	if o.onEvent != nil {
		o.onEvent(ev)
	}
	if o.logger != nil && (o.logger.Enabled(ctx, slog.LevelDebug) || ev.Kind == EventPortMismatch) {
		o.log(ctx, &ev, hostKey)
	}
}

// log writes ev at debug level. The key is shown as keyText has it: a
// fingerprint, unless it is the request's host. The URL is shown without
// its query and user information, which often carry credentials. It is
// shown without its path with Transport.HidePath (see redact.URL). URLs in
// the error's text are shown the same way. The values of the headers not
// in loggedHeaders are replaced by "[redacted]".
func (o *observer) log(ctx context.Context, ev *Event, hostKey bool) {
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("event", ev.Kind.String()))
	if ev.Reason != "" {
		attrs = append(attrs, slog.String("reason", string(ev.Reason)))
	}
	key, _ := keyText(ev.Key, hostKey)
	attrs = append(attrs, slog.String("key", key))
	if r := ev.Request; r != nil {
		attrs = append(attrs, slog.String("method", r.Method))
		if r.URL != nil {
			attrs = append(attrs, slog.String("url", redact.URL(r.URL, o.hide)))
		}
		if len(r.Header) > 0 {
			h := make([]any, 0, len(r.Header))
			for _, name := range slices.Sorted(maps.Keys(r.Header)) {
				v := strings.Join(r.Header[name], ", ")
				if o.isSecret(name) {
					v = redacted
				}
				h = append(h, slog.String(name, v))
			}
			attrs = append(attrs, slog.Group("header", h...))
		}
	}
	if ev.Attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", ev.Attempt))
	}
	if ev.Delay > 0 {
		attrs = append(attrs, slog.Duration("delay", ev.Delay))
	}
	if ev.StatusCode != 0 {
		attrs = append(attrs, slog.Int("status", ev.StatusCode))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", redact.ErrorText(ev.Err, o.hide)))
	}
	level := slog.LevelDebug
	if ev.Kind == EventPortMismatch { // a mistake in the configuration
		level = slog.LevelWarn
	}
	o.logger.LogAttrs(ctx, level, "pace: "+ev.Kind.String(), attrs...)
}
