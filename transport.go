package pace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacehttp/pace/internal/bodyprefix"
	"github.com/pacehttp/pace/internal/hdr"
	"github.com/pacehttp/pace/internal/hostkey"
	"github.com/pacehttp/pace/internal/retrydecide"
	"github.com/pacehttp/pace/internal/retryrule"
	"github.com/pacehttp/pace/retry"
	"github.com/pacehttp/pace/throttle"
)

// DefaultMaxWait is the longest a request waits, by default, for its key's
// cooldown and limiter together before it is refused with an error matching
// [ErrRateLimited]. It equals the default cap on server-given delays, so
// that a pause the Transport accepts for a retry is also accepted by the
// key's new requests.
const DefaultMaxWait = 5 * time.Minute

// Transport is an [http.RoundTripper] that paces requests per key (by
// default per host), honours the server's throttling answers and retries
// what is safe to retry.
//
// For each request it computes the key and waits out the key's pause. Then
// it waits for the key's limiter, sends the request through Base and
// classifies the answer. A throttle (see [Throttled]) pauses the whole key.
// When the pause ends, one request leaves first as a probe. The others wait
// for its answer. A retry waits for the server's delay, or else a capped
// backoff with jitter. Each retry passes the pause and the limiter again.
// The pause, the probe and the limit are the Limiter's ([throttle.Limiter]).
//
// Quota headers pace a key too, but only ever slow it down. A 429 without
// a delay lowers a paced key's rate instead of pausing it long. A slot
// counts from when its request was written to the wire, plus a margin
// learnt per key. docs/pacing.md describes each mechanism.
//
// RoundTrip keeps the [http.RoundTripper] contract. It never modifies the
// caller's request. It closes the request body on every path. It returns
// a response or an error, never both. When retries run out on a status,
// the last response comes back as it came, body unread, with a nil error.
// A wait that would outlast the context's deadline fails at once with
// [ErrWaitExceedsDeadline]. The package documentation lists the errors.
//
// The zero Transport is ready to use: no pacing, the default retry policy.
// Do not change its fields, or copy it, after first use. It is safe for
// concurrent use by multiple goroutines. [Transport.Validate] and every
// RoundTrip report invalid settings with an error matching
// [ErrInvalidConfig].
type Transport struct {
	// Base sends each attempt. If nil, a clone of http.DefaultTransport is
	// used, made once and shared by all Transports. It pings an HTTP/2
	// connection after 30 s without a frame, and drops the connection when
	// the ping has no answer within 15 s ([http.HTTP2Config]). Before the
	// retry of a timeout, Base's idle connections are closed (if it has a
	// CloseIdleConnections method), so that the retry does not reuse the
	// connection that timed out. A connection still in use by other
	// requests stays open.
	Base http.RoundTripper

	// Limits paces requests by host, and may give a host its own
	// MaxAttempts and retried statuses: see [Hosts]. Nil means no pacing,
	// unless Limiter is set. Limits and Limiter may not both be set.
	Limits Hosts

	// Key returns the key a request's pacing state, cooldown and retry
	// budget are kept under. An example is the value of an API-key header, so
	// that each credential has its own bucket. If nil, or if it returns "",
	// the key is the request's host as [Hosts] matches it. That is URL.Host in
	// lower case, without a trailing dot or a port 80 or 443, an IPv6 literal
	// in canonical text, a Unicode name in punycode. The Limit applied is
	// still chosen by host from Limits.
	//
	// A key Key returns may be a secret, so the Transport never shows it. In
	// Logger records and in the text of its errors ([*WaitError], and the
	// [*AttemptsError] that holds one) it is "key~" and the first 12
	// hexadecimal digits of the key's SHA-256. Compute it to find your key's
	// lines. A host key is shown as it is; a host longer than 259 bytes is
	// fingerprinted too. The fields that hand the key to your code hold it
	// whole: [WaitError].Key, [Event].Key, [Stats].Key.
	Key func(*http.Request) string

	// Limiter, if non-nil, paces every request instead of Limits, under the
	// request's key. It may be a [Keyed] shared by several Transports, or a
	// limiter whose state is shared across processes (package redislimit). It
	// must be safe for concurrent use; package throttle says what it must do.
	// Every Limiter hears what the Transport learns through throttle.Outcome:
	// the server's quota and the adaptive cut (docs/pacing.md).
	Limiter throttle.Limiter

	// MaxWait is the longest a request may wait for its key's cooldown and
	// limiter together before each attempt. A longer wait, or a full
	// leaky-bucket queue, fails at once, nothing sent, with a [*WaitError]
	// matching [ErrRateLimited]. Zero means DefaultMaxWait; a negative
	// MaxWait is refused (Validate, RoundTrip) with a [*ConfigError]. The waits
	// between attempts are bounded by MaxRetryAfter instead: a server delay
	// above it is not slept, and backoff waits and the Transport's own
	// pauses are capped at it.
	MaxWait time.Duration

	// MaxRetryAfter bounds every wait between attempts and every pause of a
	// key. A server delay (Retry-After or a reset header) above it is not
	// slept. The response is returned to the caller at once, unretried, and
	// OnEvent is told why ([retry.ReasonDelayTooLong]). Its key is paused for
	// MaxRetryAfter, not for the delay asked. So no answer, however large or
	// malformed its delay, can make the key's requests wait longer. Nor can
	// it make them fail with [ErrWaitTooLong] while MaxWait is at least
	// MaxRetryAfter, as the defaults are; a shorter MaxWait refuses the
	// requests that would wait out more of the pause than it. The waits
	// the Transport chooses itself are capped at it too: backoff waits, and
	// the pause after a 429 without a delay. That
	// pause is then shorter than retry.DefaultThrottlePause, or than a second, when
	// MaxRetryAfter is. Zero means DefaultMaxRetryAfter (five minutes). A
	// negative MaxRetryAfter is refused (Validate, RoundTrip) with a
	// [*ConfigError].
	MaxRetryAfter time.Duration

	// Retry is the retry configuration; see [retry.Policy]. It holds how many
	// attempts a request gets (MaxAttempts), and which statuses and transport
	// errors are retried. It holds which requests are safe to send again
	// (methods, Idempotency-Key), the backoff schedule and its jitter, the
	// per-key retry budget, and the Decide hook. Its zero value is the
	// default. A [Host] may replace its MaxAttempts and Statuses for one host.
	// An invalid setting is reported as a [*ConfigError] whose Field starts
	// with "Retry.", such as "Retry.Statuses".
	Retry retry.Policy

	// MaxBufferedBody is the largest request body, in bytes, that is read into
	// memory so that it can be sent again. It applies when the request has no
	// GetBody, which net/http also uses to replay it (after an HTTP/2 GOAWAY,
	// say). A longer body is sent once, complete, and never retried. Zero means
	// DefaultMaxBufferedBody (1 MiB). A negative value means never buffer: such
	// bodies are always sent once.
	MaxBufferedBody int64

	// PrepareAttempt, if non-nil, is called before each attempt, the first
	// included, once the attempt's waits are over. It gets pace's own copy of
	// the request for that attempt: a fresh one each time, from the caller's
	// request, the body rewound. It gets the attempt's number, from 1. A
	// number counted for a probe's throttled answer is skipped.
	//
	// It may change that copy's header and URL. It may re-sign the request
	// over a timestamp (AWS SigV4 and many payment APIs reject an old one). It
	// may set a bearer token refreshed after a 401 (Decide can refresh it and
	// return true), or count attempts in a header. To sign the body, read it
	// from req.GetBody (set whenever the request can be retried). Do not read
	// or replace req.Body. The caller's request is never modified, and changes
	// do not carry over from one attempt to the next.
	//
	// If it returns an error, that attempt is not sent and RoundTrip returns
	// the error. It is returned as it is on the first attempt, in an
	// [*AttemptsError] on a later one. It is go-retryablehttp's PrepareRetry,
	// called on the first attempt too. It is called from the goroutine of the
	// request, so it must be safe for concurrent use.
	PrepareAttempt func(req *http.Request, attempt int) error

	// ErrorOnGiveUp, if true, makes a response that could have been retried
	// but was not come back as an error instead. That is a response whose
	// status is retryable, or that Decide said to retry, whose retries the
	// attempts, the budget, MaxRetryAfter or the deadline stopped. The error is
	// an [*AttemptsError] whose Response holds that response. It is for callers
	// that treat a final 429 or 5xx as a failure (go-retryablehttp's
	// ErrorHandler). By default (false) that response is returned with a nil
	// error, body unread, as net/http's contract has it.
	ErrorOnGiveUp bool

	// OnEvent, if non-nil, is called for each wait, throttle, retry,
	// give-up and port mismatch (see [Event]), on the goroutine of the request, so it must be
	// safe for concurrent use. It must not block and must not modify the
	// request. Nothing is built for it when it is nil.
	OnEvent func(Event)

	// Logger, if non-nil, receives the same events as debug-level records
	// (an EventPortMismatch at warn level).
	//
	// Records hold no credential. A key chosen by Key is shown as a
	// fingerprint (see Key). The URL is shown as scheme://host/path, without
	// its user information and query, as are URLs in error text. Request
	// headers are shown by name, their values "[redacted]". An allow-list of
	// headers that carry no credential keeps its values:
	//
	//	Accept, Accept-Encoding, Accept-Language, Cache-Control,
	//	Content-Encoding, Content-Language, Content-Length, Content-Type,
	//	Idempotency-Key, If-Match, If-Modified-Since, If-None-Match,
	//	If-Range, If-Unmodified-Since, Pragma, Range, Traceparent,
	//	Tracestate, User-Agent, X-Correlation-Id, X-Request-Id
	//
	// It is an allow-list, not a list of secret names. Credentials travel
	// under too many names for such a list to hold them all (Authorization,
	// Cookie, X-Api-Key, Ocp-Apim-Subscription-Key, X-Access-Key,
	// Private-Token, …). A URL's path is shown unless HidePath is set.
	Logger *slog.Logger

	// SecretHeaders names request headers of the allow-list above whose
	// values must not be logged either (a User-Agent that carries a
	// token, say); other headers' values are never logged. Names are
	// case-insensitive; a name that is not a header name (an RFC 9110
	// §5.6.2 token, such as "a b" or one holding a newline) is refused
	// with a [*ConfigError].
	SecretHeaders []string

	// HidePath keeps URL paths out of what the Transport writes. Logger
	// records show a URL as scheme://host/[redacted], in error text too.
	// A *url.Error from Base (a Base that wraps an http.Client) is
	// returned, and passed in [Event].Err, cut the same way. The
	// Transport's own error text holds no URL. By default the path is
	// shown. Set it for APIs that put a secret in the path. Examples are the
	// Telegram Bot API (/bot<token>/method) and webhooks (Slack's
	// hooks.slack.com/services/T…/B…/<secret>). Others are capability URLs,
	// and signed URLs of private objects (an S3 presigned URL's key). The
	// signature is in the query, which is never logged. Event.Request is the
	// caller's request, unchanged. Caveat: http.Client wraps RoundTrip's error
	// in a *url.Error holding the whole URL. The Transport cannot change that
	// text. batch.HTTP cuts it (see batch.Options.HidePath).
	HidePath bool

	once sync.Once
	st   *state
	err  error
}

var _ http.RoundTripper = (*Transport)(nil)

// state is a Transport's configuration, checked and compiled on first use.
type state struct {
	base          http.RoundTripper
	key           func(*http.Request) string
	limiter       throttle.Limiter
	hosts         *hostLimiters
	maxWait       time.Duration
	maxAttempts   int
	maxRetryAfter time.Duration
	policy        *retrydecide.Executor
	maxBody       int64
	budget        *retrydecide.Budget
	prepare       func(*http.Request, int) error
	errorOnGiveUp bool
	hidePath      bool
	obs           *observer
	pauses        *Keyed // the throttle of keys that no limit paces
	keys          keyTable
	last          atomic.Pointer[keyEntry] // the last call's host's entry (see call.route)
}

// Validate reports the first invalid setting of t as a [*ConfigError]
// (matching [ErrInvalidConfig]), or nil. RoundTrip reports the same error.
// Validate only reads t. A nil *Transport is reported as a *ConfigError
// naming "Transport", by Validate, RoundTrip, SetLimit (Stats returns nil).
//
// Given the URLs a job will call, Validate also checks them against
// Limits. A URL whose host no key lists, while a key names that host with
// another port or none, is a *ConfigError naming the key and the host (see
// [EventPortMismatch]). So is a URL that is not absolute.
func (t *Transport) Validate(urls ...string) error {
	if t == nil {
		return errNilTransport()
	}
	if _, err := t.compile(false); err != nil || len(urls) == 0 {
		return err
	}
	hl, err := compileHosts(t.Limits, &retrydecide.Executor{}, 0)
	if err != nil {
		return err
	}
	return hl.checkURLs(urls)
}

// errNilTransport returns the error of a nil *Transport's methods, a new
// one each time, since a caller may change the *ConfigError it gets.
func errNilTransport() error {
	return configErr("Transport", nil, "nil *Transport; use &pace.Transport{} for the defaults")
}

// compile checks t's fields and, when build is true, builds its state.
func (t *Transport) compile(build bool) (*state, error) {
	for _, c := range []struct {
		field string
		v     time.Duration
	}{
		{"MaxWait", t.MaxWait},
		{"MaxRetryAfter", t.MaxRetryAfter},
	} {
		if c.v < 0 {
			return nil, configErr(c.field, c.v, "must not be negative")
		}
	}
	if t.Limiter != nil && len(t.Limits) > 0 {
		return nil, configErr("Limiter", reflect.TypeOf(t.Limiter), "set together with Limits; use one")
	}
	if err := policyErr(&t.Retry); err != nil {
		return nil, limitErr("Retry", err)
	}
	for i, h := range t.SecretHeaders {
		if err := headerNameErr(fmt.Sprintf("SecretHeaders[%d]", i), h); err != nil {
			return nil, err
		}
	}
	if !build {
		return nil, validateHosts(t.Limits)
	}
	policy := &retrydecide.Executor{Policy: t.Retry, ServerDelay: RetryAfter}
	policy.Policy.Statuses = slices.Clone(policy.Policy.Statuses)
	s := &state{
		base:          t.Base,
		key:           t.Key,
		limiter:       t.Limiter,
		maxWait:       orDefault(t.MaxWait, DefaultMaxWait),
		maxAttempts:   orDefault(t.Retry.MaxAttempts, retry.DefaultMaxAttempts),
		maxRetryAfter: orDefault(t.MaxRetryAfter, DefaultMaxRetryAfter),
		policy:        policy,
		maxBody:       orDefault(t.MaxBufferedBody, DefaultMaxBufferedBody),
		budget:        retrydecide.NewBudget(t.Retry.Budget),
		prepare:       t.PrepareAttempt,
		errorOnGiveUp: t.ErrorOnGiveUp,
		hidePath:      t.HidePath,
		obs:           newObserver(t.OnEvent, t.Logger, t.SecretHeaders, t.HidePath),
	}
	if s.base == nil {
		s.base = defaultBase()
	}
	s.pauses, _ = NewKeyed(Limit{}, KeyedOptions{}) // the zero Limit is valid
	if t.Limiter == nil {
		hl, err := compileHosts(t.Limits, s.policy, s.maxAttempts)
		if err != nil {
			return nil, err
		}
		s.hosts = hl
	}
	return s, nil
}

// init compiles t once.
func (t *Transport) init() (*state, error) {
	if t == nil {
		return nil, errNilTransport()
	}
	t.once.Do(func() { t.st, t.err = t.compile(true) })
	return t.st, t.err
}

// CloseIdleConnections closes the idle connections of Base (or of the
// default Base when Base is nil) if it has such a method. On a nil
// *Transport it does nothing.
func (t *Transport) CloseIdleConnections() {
	if t == nil {
		return
	}
	base := t.Base
	if base == nil {
		base = defaultBase()
	}
	closeIdle(base)
}

// closeIdle closes rt's idle connections if it has a CloseIdleConnections
// method.
func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// defaultBase is the Base of a Transport whose Base is nil. It is a clone
// of http.DefaultTransport with HTTP/2 health checks. It is
// http.DefaultTransport itself when that is no *http.Transport (a program
// replaced it). One is shared, so that Transports share its connections as
// they shared http.DefaultTransport's. The ping settings are those
// Kubernetes' client-go chose for silently dropped connections
// (kubernetes/kubernetes#95981).
var defaultBase = sync.OnceValue(func() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	return withPings(t, 30*time.Second, 15*time.Second)
})

// withPings returns a clone of t that sends an HTTP/2 PING after idle
// without a frame from the server. It closes the connection when the ping
// has no answer within timeout. A connection that fails so fails its
// requests with a transient error, and is never reused.
func withPings(t *http.Transport, idle, timeout time.Duration) *http.Transport {
	c := t.Clone()
	h2 := http.HTTP2Config{}
	if c.HTTP2 != nil {
		h2 = *c.HTTP2
	}
	if h2.SendPingTimeout == 0 {
		h2.SendPingTimeout, h2.PingTimeout = idle, timeout
	}
	c.HTTP2 = &h2
	return c
}

// RoundTrip sends req, paced and retried as the Transport's documentation
// says. See [Transport] for the contract and the errors.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req == nil {
		return nil, errNilRequest
	}
	s, err := t.init()
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	return s.roundTrip(req)
}

// call is the state of one RoundTrip.
type call struct {
	s   *state
	req *http.Request // the caller's, never modified
	ctx context.Context
	key string
	// hostKey: key is the request's host, not chosen by Transport.Key, so
	// logs and error text may show it (see keyText).
	hostKey bool
	lim     throttle.Limiter
	st      *keyEntry

	policy      *retrydecide.Executor // the host's (Host.Statuses) or the Transport's
	maxAttempts int                   // the host's (Host.MaxAttempts) or the Transport's

	send     *http.Request // what the first attempt sends: req, or a copy
	canRetry bool          // the body can be sent again

	bo *retrydecide.Schedule // made at the first failure; a pointer, so that the call itself stays on the stack

	// unsettled: the Permit of the attempt under way is not settled yet
	// (see release).
	unsettled bool
}

// checkRequest returns the error for a request net/http's Transport
// refuses before sending anything: a nil URL or Header, an http or https
// URL without a host. So RoundTrip refuses it up front, unpaced and
// without claiming an attempt. It returns nil for any other.
func checkRequest(req *http.Request) error {
	switch {
	case req.URL == nil:
		return errNilURL
	case req.Header == nil:
		return errNilHeader
	case req.URL.Host == "" && (req.URL.Scheme == "http" || req.URL.Scheme == "https"):
		return errNoHost
	}
	return nil
}

func (s *state) roundTrip(req *http.Request) (*http.Response, error) {
	if err := checkRequest(req); err != nil {
		closeRequestBody(req)
		return nil, err
	}
	c := call{s: s, req: req, ctx: req.Context()}
	c.route()
	c.st.requests.Add(1)
	resp, err := c.run()
	if err != nil && c.hostKey {
		err = withHostKey(err, c.key) // its text may show the host
	}
	if err != nil && s.hidePath {
		err = withoutPath(err)
	}
	return resp, err
}

// route chooses the call's key, limiter, retry policy and Stats entry.
// Without Transport.Key they follow from the request's host alone. So the
// entry of the host of the Transport's last call (s.last) holds them, and
// a call to the same host, written the same way, takes them from there.
func (c *call) route() {
	s := c.s
	raw := c.req.Host
	if c.req.URL.Host != "" {
		raw = c.req.URL.Host
	}
	if ks := s.last.Load(); ks != nil && ks.raw == raw && s.key == nil {
		c.key, c.hostKey, c.st = ks.key, true, ks
		c.lim, c.policy, c.maxAttempts = ks.lim, ks.policy, ks.maxAttempts
		return
	}
	host := hostkey.Of(raw)
	c.key, c.hostKey = c.keyWith(host)
	c.lim, c.policy, c.maxAttempts = s.limiter, s.policy, s.maxAttempts
	if c.lim == nil {
		e, listed := s.hosts.forHost(host)
		if e != nil {
			c.lim, c.policy, c.maxAttempts = e.lim, e.policy, e.maxAttempts
		}
		if c.lim == nil {
			c.lim = s.pauses
		}
		if !listed && s.obs != nil {
			c.reportNear(host)
		}
	}
	c.st = s.keys.of(c, host, raw)
	if s.key == nil && c.st.raw == raw && c.st != &s.keys.over {
		s.last.Store(c.st)
	}
}

// run sends the call's attempts, the call's key and limiter chosen.
func (c *call) run() (*http.Response, error) {
	send, replayable, err := prepareBody(c.req, c.s.maxBody) // closes req.Body on error
	if err != nil {
		return nil, err
	}
	c.send, c.canRetry = c.policy.WithIdempotencyKey(send), replayable

	lastStatus := 0
	evict, sent := false, false
	var p throttle.Permit
	defer c.release(&p)
	for attempt := 1; ; attempt++ {
		if err := c.admit(&attempt, lastStatus, &p); err != nil {
			if attempt == 1 {
				closeRequestBody(c.send)
			}
			return nil, err
		}
		c.st.admitted.Add(1)
		out, err := c.request(attempt, &p)
		if err != nil {
			c.unsettled = false
			c.lim.Settle(p, throttle.Outcome{})
			if attempt == 1 { // only PrepareAttempt fails a first attempt
				return nil, err
			}
			return nil, &AttemptsError{Attempts: attempt - 1, StatusCode: lastStatus, Err: err}
		}
		if sent { // Stats.Retries counts the attempts sent again
			c.st.retries.Add(1)
		}
		sent = true
		resp, err := c.sendAttempt(out, evict)
		var v retrydecide.Verdict
		c.settle(attempt, &p, out, resp, err, &v)
		if !v.Retry {
			return c.finish(attempt, out, resp, err, &v)
		}
		evict = err != nil && retrydecide.IsTimeout(c.ctx, err)
		lastStatus = statusOf(resp)
		if err := c.retry(attempt, resp, err, &v); err != nil {
			return nil, err
		}
	}
}

// release settles the Permit p when the call unwinds with it unsettled:
// a panic in Base, PrepareAttempt or a hook. The limiter hears of it as of
// a transport error. So a probe hands its role on, and the key's other
// requests do not wait for an answer that will never come.
func (c *call) release(p *throttle.Permit) {
	if c.unsettled {
		c.unsettled = false
		c.lim.Settle(*p, throttle.Outcome{Sent: true})
	}
}

// sendAttempt sends out through Base, first closing Base's idle
// connections when evict is set (the last attempt timed out: not onto its
// connection again). A Base that breaks the RoundTripper contract is made
// to keep it: a response with an error is drained and dropped, and no
// response with no error becomes an error.
func (c *call) sendAttempt(out *http.Request, evict bool) (*http.Response, error) {
	base := c.s.base
	if evict {
		closeIdle(base)
	}
	resp, err := base.RoundTrip(out)
	if resp != nil && err != nil { // a broken Base; keep the contract
		retryrule.Drain(resp.Body)
		resp = nil
	}
	if resp == nil && err == nil {
		err = fmt.Errorf("pace: %T returned no response and no error", base)
	}
	return resp, err
}

// settle decides what follows the attempt that ended with resp or err
// (decide), storing the verdict in *v, and tells the limiter the outcome
// (the verdict's pause and cut, the quota resp states). A pause is counted
// and emitted as an EventThrottle.
func (c *call) settle(attempt int, p *throttle.Permit, out *http.Request, resp *http.Response, err error, v *retrydecide.Verdict) {
	o := throttle.Outcome{At: c.decide(attempt, p, out, resp, err, v), Sent: true, Response: resp != nil, Pause: v.Pause, Cut: v.Cut}
	if resp != nil {
		o.Quota = c.quota(resp, &o.At)
	}
	c.unsettled = false
	c.lim.Settle(*p, o)
	if v.Pause > 0 {
		c.st.throttles.Add(1)
		c.st.lastThrottle.Store(int32(statusOf(resp)))
		if c.s.obs != nil {
			c.emit(Event{Kind: EventThrottle, Attempt: attempt, Delay: v.Pause, StatusCode: statusOf(resp)})
		}
	}
}

// finish ends the call after attempt, which *v does not retry: it counts
// and emits a give-up, and returns resp (its Request the caller's) or the
// error the verdict and ErrorOnGiveUp call for.
func (c *call) finish(attempt int, out *http.Request, resp *http.Response, err error, v *retrydecide.Verdict) (*http.Response, error) {
	gaveUp := c.gaveUp(v.Why)
	if gaveUp {
		c.st.giveUps.Add(1)
	}
	if gaveUp && c.s.obs != nil {
		var gerr error = err
		switch {
		case v.Fail != nil:
			gerr = v.Fail
		case v.Deadline:
			gerr = &WaitError{Key: c.key, Delay: v.Refused, Err: errDeadline}
		}
		c.giveUp(attempt, v.Why, v.Refused, statusOf(resp), gerr)
	}
	if resp != nil && out != c.req {
		resp.Request = c.req
	}
	switch {
	case v.Fail != nil: // Decide ended the call
		return nil, &AttemptsError{Attempts: attempt, StatusCode: statusOf(resp), Reason: retry.ReasonDecided, Err: v.Fail,
			Response: c.giveUpResponse(resp)}
	case v.Deadline: // the wait would outlast the context's deadline
		return nil, &AttemptsError{Attempts: attempt, StatusCode: statusOf(resp), Reason: retry.ReasonDeadline,
			Err: &WaitError{Key: c.key, Delay: v.Refused, Err: errDeadline}, Response: c.giveUpResponse(resp)}
	case err != nil:
		return nil, &AttemptsError{Attempts: attempt, Reason: giveUpReason(v.Why), Err: err}
	case c.s.errorOnGiveUp && v.HandBack:
		return nil, &AttemptsError{Attempts: attempt, StatusCode: resp.StatusCode, Response: c.giveUpResponse(resp)}
	case c.s.errorOnGiveUp && giveUpReason(v.Why) != "":
		return nil, &AttemptsError{Attempts: attempt, StatusCode: resp.StatusCode, Reason: v.Why, Response: c.giveUpResponse(resp)}
	}
	return resp, nil
}

// retry emits the retry *v decided after attempt, drains resp's
// body and sleeps the verdict's wait; it returns an *AttemptsError when the
// request's context ends the sleep.
func (c *call) retry(attempt int, resp *http.Response, err error, v *retrydecide.Verdict) error {
	if c.s.obs != nil {
		c.emit(Event{Kind: EventRetry, Reason: v.Why, Attempt: attempt, Delay: v.Wait, StatusCode: statusOf(resp), Err: err})
	}
	retryrule.Drain(bodyOf(resp))
	if err := sleepCtx(c.ctx, c.key, v.Wait); err != nil {
		return &AttemptsError{Attempts: attempt, StatusCode: statusOf(resp), Err: err}
	}
	return nil
}

// reportNear emits an EventPortMismatch, once per key, for each key of
// Limits that names host with another port or none; host is the call's,
// which no key lists.
func (c *call) reportNear(host string) {
	for _, e := range c.s.hosts.near(host) {
		if !e.mismatched.Load() && e.mismatched.CompareAndSwap(false, true) {
			c.emit(Event{Kind: EventPortMismatch, Err: portMismatch(e.key, host)})
		}
	}
}

// quota returns the server's quota as resp's headers state it (see
// serverQuota). Its Reset is capped at MaxRetryAfter, so that no answer
// can pause or slow a key for longer. It reads the clock into *at if it
// has not been read; the quota counts from *at. It returns the zero Quota
// when resp states none. A response without quota headers costs a few map
// lookups.
func (c *call) quota(resp *http.Response, at *time.Time) throttle.Quota {
	if !quotaPresent(resp.Header) {
		return throttle.Quota{}
	}
	now := *at
	if now.IsZero() {
		now = time.Now()
	}
	q, ok := serverQuota(resp.Header, now)
	if !ok || q.Reset <= 0 {
		return throttle.Quota{}
	}
	q.Reset = min(q.Reset, c.s.maxRetryAfter)
	*at = now
	return q
}

// quotaPresent reports whether h has any header serverQuota reads a reset
// from, so that the caller reads the clock only then. A response has fewer
// headers than there are such names, most often: then it walks them, and
// looks up only those whose first byte a quota header starts with.
func quotaPresent(h http.Header) bool {
	if len(h) > len(quotaNames.names) {
		for _, name := range quotaNames.names {
			if len(h[name]) > 0 {
				return true
			}
		}
		return false
	}
	for name, v := range h {
		if len(v) > 0 && name != "" && quotaNames.first[name[0]] && quotaNames.set[name] {
			return true
		}
	}
	return false
}

// quotaNames are the headers quotaPresent looks for: the IETF RateLimit
// field, Shopify's call limit, and each quota family's reset.
var quotaNames = func() (q struct {
	names []string
	set   map[string]bool
	first [256]bool
}) {
	q.names = []string{hdr.RateLimit, hdrShopifyCallLimit}
	for _, f := range quotaFamilies {
		q.names = append(q.names, f.reset)
	}
	q.set = make(map[string]bool, len(q.names))
	for _, n := range q.names {
		q.set[n] = true
		q.first[n[0]] = true
	}
	return q
}()

// giveUpReason is the Reason an AttemptsError records for a verdict's why:
// empty for the reasons of a retry.
func giveUpReason(r retry.Reason) retry.Reason {
	if r == retry.ReasonServerDelay || r == retry.ReasonBackoff {
		return ""
	}
	return r
}

// gaveUp reports whether a call that ended for reason r, a verdict's why,
// is a give-up. A give-up is a retryable failure the Transport could have
// retried but did not. It is counted in Stats.GiveUps and emitted as
// EventGiveUp. A call allowed one attempt (Retry.MaxAttempts or
// Host.MaxAttempts 1) makes no retries. So running out of attempts is no
// give-up there. Under retryable.Install, for one, the retryablehttp.Client
// makes the retries, and most of its 429s are retried and succeed.
func (c *call) gaveUp(r retry.Reason) bool {
	return giveUpReason(r) != "" && (r != retry.ReasonAttempts || c.maxAttempts > 1)
}

// keyOf returns the request's key.
func (c *call) keyOf() string {
	k, _ := c.keyWith(requestHost(c.req))
	return k
}

// keyWith returns the request's key, given its host (requestHost), and
// whether that key is the host (Transport.Key is nil or returned "").
func (c *call) keyWith(host string) (key string, isHost bool) {
	if c.s.key != nil {
		if k := c.s.key(c.req); k != "" {
			return k, false
		}
	}
	return host, true
}

// handedBack reports whether err, a Wait's ErrThrottled, hands a paused
// key's pause back to a caller that waits it out in its own line
// (retryrule.HandBack, Keyed.Wait). Such an error names the pause's rest; a
// probe's throttled answer names none.
func handedBack(err error) bool {
	var we *WaitError
	return errors.As(err, &we) && we.Delay > 0
}

// admit waits for the key's limiter before *attempt, for at most maxWait
// in all. A throttled answer to the key's probe, while the request waited
// behind it, counts as the request's own attempt. It would have met the
// same throttle. So *attempt moves on. When the attempts are spent, the
// request ends with an *AttemptsError wrapping the limiter's error
// (ErrThrottled), having sent nothing more. lastStatus is the status of the
// request's own last attempt. The Permit is stored in *p, also with an
// error.
func (c *call) admit(attempt *int, lastStatus int, p *throttle.Permit) error {
	waited := time.Duration(0)
	for {
		var err error
		*p, err = c.lim.Wait(c.ctx, c.key, max(c.s.maxWait-waited, 1)) // 1ns: refuse any wait
		if err == nil {
			c.unsettled = true
			if w := p.Held + p.Delay; w > 0 {
				c.st.waits.Add(1)
				c.st.waited.Add(int64(w))
			}
			if c.s.obs != nil {
				if p.Held > 0 {
					c.emit(Event{Kind: EventWait, Reason: retry.ReasonCooldown, Attempt: *attempt, Delay: p.Held})
				}
				if p.Delay > 0 {
					c.emit(Event{Kind: EventWait, Reason: retry.ReasonLimit, Attempt: *attempt, Delay: p.Delay})
				}
			}
			return nil
		}
		if !errors.Is(err, ErrThrottled) || handedBack(err) {
			if *attempt > 1 {
				return &AttemptsError{Attempts: *attempt - 1, StatusCode: lastStatus, Err: err}
			}
			return err
		}
		waited += p.Held // the Permit says how long it waited, also with an error
		lastStatus = c.st.throttleStatus()
		if *attempt >= c.maxAttempts {
			if c.gaveUp(retry.ReasonAttempts) {
				c.st.giveUps.Add(1)
			}
			if c.gaveUp(retry.ReasonAttempts) && c.s.obs != nil {
				c.giveUp(*attempt, retry.ReasonAttempts, 0, lastStatus, err)
			}
			return &AttemptsError{Attempts: *attempt, StatusCode: lastStatus, Reason: retry.ReasonAttempts, Err: err}
		}
		*attempt++
	}
}

// request returns the request to send for attempt, admitted by p. For a
// retry it is a fresh copy with the body rewound. So is the first attempt
// when PrepareAttempt is set, which then changes it. When p asks for it, a
// net/http/httptrace hook tells the limiter the instant the request is
// written. When PrepareAttempt fails, the attempt's body is closed and its
// error returned.
func (c *call) request(attempt int, pp *throttle.Permit) (*http.Request, error) {
	out := c.send
	if attempt > 1 {
		var err error
		if out, err = rewindBody(c.ctx, c.send); err != nil {
			return nil, err
		}
	} else if c.s.prepare != nil {
		out = c.send.Clone(c.ctx) // the body is the caller's, sent once
	}
	if c.s.prepare != nil {
		if err := c.s.prepare(out, attempt); err != nil {
			closeRequestBody(out)
			return nil, err
		}
	}
	if pp.Track {
		lim, p := c.lim, *pp
		// WroteRequest comes after the request's bytes were flushed to the
		// connection (WroteHeaders comes before the flush), so the instant
		// is never earlier than the server can have seen the request.
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { lim.Depart(p, time.Now()) }}
		out = out.WithContext(httptrace.WithClientTrace(out.Context(), trace))
	}
	return out, nil
}

// decide settles the attempt that ended with resp or err, admitted by a
// Permit with the given Strikes. It charges or refunds the key's retry
// budget. It stores the retry decision (retrydecide.Executor.Decide) in *v,
// and returns the instant it was made. On the success path it leaves *v
// alone (the zero verdict) and returns the zero Time, reading no clock.
func (c *call) decide(attempt int, p *throttle.Permit, out *http.Request, resp *http.Response, err error, v *retrydecide.Verdict) time.Time {
	again, why, hook := c.policy.Check(out, resp, err, attempt)
	status := statusOf(resp)
	// failed: an outcome that costs budget, a retryable failure whether
	// or not this request may repeat it.
	failed := c.policy.Failed(c.ctx, resp, err, again)
	if !failed && status < 400 && (hook == nil || hook.Fail == nil) {
		if attempt == 1 && c.s.budget != nil && c.st.budget.Tracking() { // the success path: one atomic load when nothing failed lately
			c.s.budget.Request(&c.st.budget, false, time.Now())
		}
		return time.Time{}
	}
	if c.bo == nil {
		c.bo = c.policy.NewSchedule(c.s.budget, &c.st.budget, c.s.maxRetryAfter)
	}
	now := time.Now()
	if attempt == 1 && c.s.budget != nil {
		c.s.budget.Request(&c.st.budget, failed, now)
	}
	in := retrydecide.End{
		Now: now, Attempt: attempt, Resp: resp, Err: err, Retry: again, Why: why,
		Failed: failed, CanRetry: c.canRetry, Withdraw: c.bo.Withdraw, Strikes: p.Strikes,
		MaxAttempts: c.maxAttempts, MaxRetryAfter: c.s.maxRetryAfter, Jitter: c.policy.Policy.Jitter,
		CustomBackoff: c.policy.Policy.NewBackOff != nil, Backoff: c.bo.Next,
		Adaptive: p.Limited, // a configured limit paces the key
	}
	in.Pauses, in.HandBack = retryrule.HandBack(c.ctx)
	if dl, ok := c.ctx.Deadline(); ok {
		in.Deadline = dl
	}
	if hook != nil {
		in.HookWait, in.Fail = hook.Wait, hook.Fail
	}
	*v = c.policy.Decide(in)
	return in.Now
}

// giveUpResponse returns resp, or nil, for an [*AttemptsError] when
// ErrorOnGiveUp is set. Its body is replaced by a copy of its first 4 KiB
// (bodyprefix.Max), and the original is drained and closed. So the error
// holds no connection. ContentLength is the copy's length. Without
// ErrorOnGiveUp it drains and closes resp's body and returns nil.
func (c *call) giveUpResponse(resp *http.Response) *http.Response {
	if resp == nil || !c.s.errorOnGiveUp {
		retryrule.Drain(bodyOf(resp))
		return nil
	}
	var prefix []byte
	if resp.Body != nil && resp.Body != http.NoBody {
		prefix, _ = bodyprefix.Read(resp.Body, bodyprefix.Max) // a read error leaves the bytes read so far
		retryrule.Drain(resp.Body)
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(prefix)), int64(len(prefix))
	return resp
}

// giveUp emits an EventGiveUp.
func (c *call) giveUp(attempt int, r retry.Reason, d time.Duration, status int, err error) {
	c.emit(Event{Kind: EventGiveUp, Reason: r, Attempt: attempt, Delay: d, StatusCode: status, Err: err})
}

// emit completes ev with the call's key and request and delivers it.
func (c *call) emit(ev Event) {
	if c.s.obs == nil {
		return
	}
	ev.Key, ev.Request = c.key, c.req
	if c.hostKey {
		ev.Err = withHostKey(ev.Err, c.key)
	}
	if c.s.hidePath {
		ev.Err = withoutPath(ev.Err)
	}
	c.s.obs.emit(c.ctx, ev, c.hostKey)
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// bodyOf returns resp's body, or nil.
func bodyOf(resp *http.Response) io.ReadCloser {
	if resp == nil {
		return nil
	}
	return resp.Body
}

func init() { retryrule.StatusesOf = statusesFor }

// statusesFor returns the Statuses rt, a *Transport, retries for req: its
// host's (Hosts) or its Retry's. It is retryrule.StatusesOf, for package batch.
func statusesFor(rt http.RoundTripper, req *http.Request) ([]int, bool) {
	t, ok := rt.(*Transport)
	if !ok || t == nil {
		return nil, false
	}
	s, err := t.init()
	if err != nil {
		return t.Retry.Statuses, true
	}
	p := s.policy
	if s.limiter == nil {
		if e, _ := s.hosts.forHost(requestHost(req)); e != nil {
			p = e.policy
		}
	}
	return p.Policy.Statuses, true
}
