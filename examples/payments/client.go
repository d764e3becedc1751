package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/retry"
)

// Order is something to charge for.
type Order struct {
	ID       string
	Customer string
	Amount   int64 // in cents
	Currency string
}

// Charge is a charge the API made.
type Charge struct {
	ID       string
	Order    string
	Amount   int64
	Currency string
	Replayed bool // the API answered from its idempotency store
}

// Client charges orders through a payment API. It is safe for concurrent
// use.
type Client struct {
	base string // the API's base URL
	http *http.Client
}

// NewClient returns a Client for the API at baseURL whose requests go out
// through base (nil means http.DefaultTransport), paced and retried by a
// pace.Transport.
func NewClient(baseURL string, base http.RoundTripper) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, err
	}
	t := &pace.Transport{
		Base: base,
		Limits: pace.Hosts{
			// The API's host: 100 requests a second, bursts of 10. Set
			// it to what your provider documents for your account.
			u.Host: {Limit: pace.TokenBucket(pace.PerSecond(100), 10)},
		},
		// Retries of 429, 503 and dropped connections. A POST is retried
		// only because it carries an Idempotency-Key (see Charge).
		Retry: retry.Policy{
			MaxAttempts: 8,
			// The default retry budget (Finagle's RetryBudget: 10 retries a
			// second plus one for every five requests, over 10 seconds) keeps
			// a sick API from being hammered. This API fails one request in
			// three by design, and a charge is worth a retry: one retry for
			// every request, on top of the reserve.
			Budget: retry.Budget{PercentCanRetry: 1},
			// Without a server delay (a 503, a dropped connection), wait
			// 5ms, 10ms, 20ms… up to 200ms, jittered: short, for the demo's
			// sake; the default starts at 1s for a 503.
			NewBackOff: func() backoff.BackOff {
				return backoff.NewExponentialBackOff(
					backoff.WithInitialInterval(5*time.Millisecond),
					backoff.WithMaxInterval(200*time.Millisecond),
					backoff.WithRandomizationFactor(0), // pace jitters
					backoff.WithMaxElapsedTime(0),      // MaxAttempts bounds the retries
				)
			},
		},
		// A server that asks for more than this gets its answer back
		// unretried, so a charge never hangs for minutes.
		MaxRetryAfter: 10 * time.Second,
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &Client{base: baseURL, http: &http.Client{Transport: t}}, nil
}

// idempotencyKey returns the key of o's charge: the same for every attempt
// and every call for o, and different for every order.
func idempotencyKey(o Order) string { return "charge-" + o.ID }

// Charge charges o, or returns the charge already made for o: every call
// for o sends the same Idempotency-Key, so the API makes at most one
// charge per order however often Charge, or the Transport, sends it.
func (c *Client) Charge(ctx context.Context, o Order) (Charge, error) {
	body, err := json.Marshal(chargeRequest{Order: o.ID, Customer: o.Customer, Amount: o.Amount, Currency: o.Currency})
	if err != nil {
		return Charge{}, err
	}
	// A bytes.Reader body gives the request a GetBody, so each retry
	// sends the body again, byte for byte.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/charges", bytes.NewReader(body))
	if err != nil {
		return Charge{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idempotencyKey(o))
	resp, err := c.http.Do(req)
	if err != nil {
		return Charge{}, fmt.Errorf("charging order %s: %w", o.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Charge{}, fmt.Errorf("charging order %s: HTTP %d: %s", o.ID, resp.StatusCode, bytes.TrimSpace(msg))
	}
	var ch charge
	if err := json.NewDecoder(resp.Body).Decode(&ch); err != nil {
		return Charge{}, fmt.Errorf("charging order %s: reading the answer: %w", o.ID, err)
	}
	return Charge{ID: ch.ID, Order: ch.Order, Amount: ch.Amount, Currency: ch.Currency,
		Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}, nil
}
