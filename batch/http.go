package batch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/hostkey"
	"github.com/pacehttp/pace/internal/redact"
	"github.com/pacehttp/pace/internal/retryrule"
)

// HTTP returns an item function for [Run] that sends one request per item
// through client (nil means http.DefaultClient) and checks the response.
//
// build makes the item's request. It should attach ctx
// (http.NewRequestWithContext), so that cancelling the run cancels the
// request. If build is nil, HTTP returns nil, which [Run] refuses with a
// [*pace.ConfigError] for "fn" before anything runs. check judges the
// response; nil means [CheckResponse]. The response's status is recorded
// for [Result.Status]. Its body is closed after check returns, with up to
// 64 KiB drained first so the connection can be reused. check may read the
// body.
//
// Idempotency keys: build may leave a POST or PATCH without an
// Idempotency-Key (or X-Idempotency-Key) header. It then gets the item's
// [IdempotencyKey], derived from the run's journal and the item's ID. A
// server that deduplicates by key applies the item once, however often it
// is sent (draft-ietf-httpapi-idempotency-key-header; Stripe, Adyen,
// PayPal). That holds within this run and the runs resumed from its
// journal. It also lets pace.Transport retry it. To send one without a key,
// set the header to the empty string in build. HTTP then removes it and
// adds none.
//
// Write-ahead: with [Options.Journal], HTTP records the request's method
// and key in the journal just before sending it. An item may be in doubt
// after an earlier run. HTTP then sends the request only if it is as safe
// to send again as the recorded one: the same idempotent method, or the
// same key. Otherwise it sends nothing and the item ends [InDoubt].
//
// Pacing, per-host limits and transport-level retries belong to the
// client's Transport (pace.Transport, for one). The batch sees only the
// final response of each attempt. A final 429 is a throttle: Run pauses
// the request's key and probes it (docs/batch.md). The key is what
// client's pace.Transport keys the request by: Transport.Key, or else the
// host as pace.Hosts matches it. Each attempt waits for its key before it
// is sent. While the key is paused, its item waits in Run's line, holding
// no slot. The pace.Transport hands its throttles back instead of sleeping
// on them. With any other client Transport, a pace.Transport wrapped in
// another too, the key is the host. A pace.Transport within then sleeps as
// usual.
//
// An error from client.Do comes as a *url.Error, which Run sees through.
// Its URL is cut to scheme://host/path, with no path with
// [Options].HidePath. The user information and the query are cut, as they
// often carry credentials. So neither the journal nor the Report holds
// them; Op and the wrapped error are kept. With pace.Transport's
// ErrorOnGiveUp the final answer comes inside a *pace.AttemptsError. Run
// reads it from its Response as if it had been returned. A 429 is the same
// throttle, a 503 the same retryable failure.
//
// An error matching pace.ErrRateLimited with nothing sent is a client-side
// refusal: the Transport's limiter refused the wait, as a short MaxWait
// does. The item is tried again after the wait it names, and the key is
// not paused. Any other error fails the item, or sends it back in line as
// [Options.MaxRequeues] says. An error from build, a nil request or a
// request with a nil URL fails the item, with nothing sent.
//
// The returned function is safe for concurrent use if build and check are.
func HTTP[T any](client *http.Client, build func(ctx context.Context, item T) (*http.Request, error), check func(*http.Response) error) func(context.Context, T) error {
	if client == nil {
		client = http.DefaultClient
	}
	if check == nil {
		check = CheckResponse
	}
	if build == nil {
		return nil
	}
	return func(ctx context.Context, item T) error {
		a := attemptOf(ctx)
		if a != nil && a.item != nil {
			if err := a.item.entered(); err != nil {
				return err
			}
		}
		req, err := build(ctx, item)
		if err != nil {
			return err
		}
		if req == nil {
			return errNilRequest
		}
		if req.URL == nil {
			return errNilURL
		}
		if a != nil {
			key, own, host := gateKey(client, req)
			a.host = host
			a.tr, _ = clientTransport(client).(*pace.Transport)
			if err := a.enter(ctx, key); err != nil {
				return err
			}
			rctx := a.departures(req.Context(), key)
			if own {
				rctx = retryrule.WithHandBack(rctx, a.pauses) // the Transport hands its pauses back
			}
			req = req.WithContext(rctx)
			if a.item != nil {
				if err := a.item.sending(req); err != nil {
					return err
				}
			}
		}
		if a != nil {
			a.statuses, _ = retryrule.StatusesOf(clientTransport(client), req)
		}
		resp, err := client.Do(req)
		if err != nil {
			return redact.Error(err, a.hidePath()) // its URL without user information and query (and path)
		}
		defer retryrule.Drain(resp.Body)
		RecordStatus(ctx, resp.StatusCode)
		return check(resp)
	}
}

var (
	errNilRequest = errors.New("batch: build returned a nil request")
	errNilURL     = errors.New("batch: build returned a request with a nil URL; nothing was sent")
)

// CheckResponse is the default response check of [HTTP]. It accepts a 2xx
// status. It returns a [*ThrottledError] for a throttle as [pace.Throttled]
// defines it: a 429, or a 503 or 403 that names a delay. That is the same
// test as pace.Transport's. RetryAfter holds the delay, read by the same
// rules as pace.Transport: Retry-After, retry-after-ms, x-ms-retry-after-ms
// and the rate-limit reset headers. It counts from the moment
// CheckResponse is called. Any other status gives a [*StatusError]. resp
// must not be nil; its body is not read.
func CheckResponse(resp *http.Response) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	if d, ok := pace.Throttled(resp, time.Now()); ok {
		return &ThrottledError{Status: code, RetryAfter: d}
	}
	return &StatusError{Code: code}
}

// hidePath reports whether the attempt's run has Options.HidePath; false
// for a nil a (HTTP called outside Run).
func (a *attemptState) hidePath() bool {
	return a != nil && a.item != nil && a.item.run.hidePath
}

// gateKey returns the key a request's throttles pause in a run. It also
// returns whether that is the key of client's pace.Transport
// (client.Transport is one), and whether it is the request's host. The key
// is its Transport.Key for the request, or else its host as pace.Transport
// keys hosts (see pace.Hosts). With any other Transport it is the host,
// and own is false.
func gateKey(client *http.Client, req *http.Request) (key string, own, host bool) {
	t, ok := clientTransport(client).(*pace.Transport)
	if ok && t.Key != nil {
		if k := t.Key(req); k != "" {
			return k, true, false
		}
	}
	return hostkey.Request(req), ok, true
}

// departures returns ctx with a net/http/httptrace hook that records in
// the run's timeline each request that leaves under key, the client
// Transport's own retries included. pace.Transport's hook, which counts
// departures for its limiter, composes with it.
func (a *attemptState) departures(ctx context.Context, key string) context.Context {
	a.entered = time.Now()
	if a.tl == nil {
		return ctx
	}
	tl, tr, host := a.tl, a.tr, a.host
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			a.wrote.Add(1)
			tl.record(key, host, tr, evSent, time.Now())
		}
	}})
}

// clientTransport returns the RoundTripper client sends with.
func clientTransport(client *http.Client) http.RoundTripper {
	if client.Transport == nil {
		return http.DefaultTransport
	}
	return client.Transport
}

// RecordStatus records code as the HTTP status of the attempt that ctx
// belongs to, so that it shows in [Result.Status]; the last code recorded
// wins. [HTTP] calls it; an item function that makes its own requests may
// too. It does nothing when ctx is not an attempt's context. It is safe for
// concurrent use.
func RecordStatus(ctx context.Context, code int) {
	if a := attemptOf(ctx); a != nil {
		a.status.Store(int64(code))
	}
}
