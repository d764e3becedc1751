package retryable

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/retry"
)

// Signing: a server that, like AWS SigV4 and many payment APIs, refuses a
// signature made too long ago.
const (
	signMaxAge   = 500 * time.Millisecond // older signatures get a 401
	signPerKey   = 20                     // requests per key per second window; more get a 429
	signCharges  = 100
	signWorkers  = 8
	signRetryMax = 10
)

var signSecret = []byte("test secret")

// sign sets the X-Signed-At and X-Signature headers of req: an HMAC of its
// API key and the current time.
func sign(req *http.Request) {
	at := strconv.FormatInt(time.Now().UnixNano(), 10)
	m := hmac.New(sha256.New, signSecret)
	m.Write([]byte(req.Header.Get("X-Api-Key") + "|" + at))
	req.Header.Set("X-Signed-At", at)
	req.Header.Set("X-Signature", hex.EncodeToString(m.Sum(nil)))
}

// signServer refuses, with a 401, a signature that is wrong or older than
// signMaxAge, and, with a 429 and Retry-After: 1, a key's requests past
// signPerKey in a one-second window of its clock. A key's first window is
// spent when the run begins, as when another process of a fleet used it:
// so the first request of each key meets a 429, and the key's pause makes
// the requests queued behind it wait about a second.
type signServer struct {
	*httptest.Server
	mu                   sync.Mutex
	window               map[string]int64 // key -> the second of its count
	count                map[string]int
	ok, stale, throttled int
}

func newSignServer(t *testing.T) *signServer {
	s := &signServer{window: map[string]int64{}, count: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *signServer) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	key := r.Header.Get("X-Api-Key")
	at, err := strconv.ParseInt(r.Header.Get("X-Signed-At"), 10, 64)
	m := hmac.New(sha256.New, signSecret)
	m.Write([]byte(key + "|" + r.Header.Get("X-Signed-At")))
	valid := err == nil && hmac.Equal([]byte(r.Header.Get("X-Signature")), []byte(hex.EncodeToString(m.Sum(nil))))
	s.mu.Lock()
	defer s.mu.Unlock()
	if !valid || now.Sub(time.Unix(0, at)) > signMaxAge {
		s.stale++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if sec, seen := now.Unix(), s.window[key]; seen == 0 {
		s.window[key], s.count[key] = sec, signPerKey
	} else if seen != sec {
		s.window[key], s.count[key] = sec, 0
	}
	if s.count[key]++; s.count[key] > signPerKey {
		s.throttled++
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	s.ok++
	w.WriteHeader(http.StatusOK)
}

func (s *signServer) counts() (ok, stale, throttled int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ok, s.stale, s.throttled
}

// signTransport is the pacing Transport of both routes: per API key, the
// server's rate, one request at a time.
func signTransport(base http.RoundTripper, attempts int) *pace.Transport {
	return &pace.Transport{
		Base:   base,
		Key:    func(r *http.Request) string { return r.Header.Get("X-Api-Key") },
		Retry:  retry.Policy{MaxAttempts: attempts},
		Limits: pace.Hosts{pace.DefaultHost: {Limit: pace.TokenBucket(pace.PerSecond(signPerKey), 1)}},
	}
}

// charge runs signCharges charges over two API keys on signWorkers
// goroutines, each by do, and returns how many came back 200.
func charge(t *testing.T, url string, do func(req *http.Request) (*http.Response, error)) int {
	var mu sync.Mutex
	ok := 0
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range signWorkers {
		wg.Go(func() {
			for i := range jobs {
				req, err := http.NewRequest(http.MethodPost, url, nil)
				if !assert.NoError(t, err) {
					continue
				}
				req.Header.Set("X-Api-Key", "key-"+strconv.Itoa(i%2))
				req.Header.Set("Idempotency-Key", "charge-"+strconv.Itoa(i))
				resp, err := do(req)
				if !assert.NoError(t, err, "charge %d", i) {
					continue
				}
				resp.Body.Close()
				mu.Lock()
				if resp.StatusCode == http.StatusOK {
					ok++
				}
				mu.Unlock()
			}
		})
	}
	for i := range signCharges {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return ok
}

// TestInstallSignsAfterPaceWaits: a client that signs each request before
// Do and re-signs each retry in PrepareRetry, as go-retryablehttp's
// PrepareRetry doc suggests, keeps working through Install against a
// server that refuses signatures older than 500 ms: pace's waits (its
// limiter, the key's pause after a 429) come before the signature.
func TestInstallSignsAfterPaceWaits(t *testing.T) {
	s := newSignServer(t)
	c, base := newClient(t, signRetryMax, 10*time.Millisecond, 2*time.Second)
	c.PrepareRetry = func(req *http.Request) error { sign(req); return nil }
	require.NoError(t, (&Policy{}).Install(c, signTransport(base, 1)))

	got := charge(t, s.URL, func(req *http.Request) (*http.Response, error) {
		sign(req) // the client's own code, as with go-retryablehttp alone
		rreq, err := retryablehttp.FromRequest(req)
		if err != nil {
			return nil, err
		}
		return c.Do(rreq)
	})
	ok, stale, throttled := s.counts()
	t.Logf("server: %d ok, %d stale (401), %d throttled (429)", ok, stale, throttled)
	assert.Equal(t, signCharges, got, "charges that succeeded")
	assert.Zero(t, stale, "401s for a stale signature")
}

// TestTransportSignsInPrepareAttempt: the guide's route, a pace.Transport
// whose PrepareAttempt signs every attempt once its waits are over.
func TestTransportSignsInPrepareAttempt(t *testing.T) {
	s := newSignServer(t)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := signTransport(base, signRetryMax)
	tr.PrepareAttempt = func(req *http.Request, _ int) error { sign(req); return nil }
	hc := &http.Client{Transport: tr}

	got := charge(t, s.URL, hc.Do)
	ok, stale, throttled := s.counts()
	t.Logf("server: %d ok, %d stale (401), %d throttled (429)", ok, stale, throttled)
	assert.Equal(t, signCharges, got, "charges that succeeded")
	assert.Zero(t, stale, "401s for a stale signature")
}

// TestInstallPrepareRetry: Install moves each client's PrepareRetry into
// the shared Transport, so clients that share it keep their own, an
// Install run twice keeps it, and a PrepareRetry error ends the request
// before anything is sent, without a retry. A Transport whose
// PrepareAttempt is set already is refused for a client with a
// PrepareRetry.
func TestInstallPrepareRetry(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("X-Client"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	tr := signTransport(nil, 1)
	errPrepare := errors.New("no token")
	var failed atomic.Int32
	var clients []*retryablehttp.Client
	for _, name := range []string{"a", "b", "fail"} {
		c, base := newClient(t, 3, time.Millisecond, time.Millisecond)
		tr.Base = base
		c.PrepareRetry = func(req *http.Request) error {
			if name == "fail" {
				failed.Add(1)
				return errPrepare
			}
			req.Header.Set("X-Client", name)
			return nil
		}
		require.NoError(t, (&Policy{}).Install(c, tr))
		assert.Nil(t, c.PrepareRetry)
		clients = append(clients, c)
	}
	require.NoError(t, (&Policy{}).Install(clients[0], tr), "a second Install")

	for _, c := range clients[:2] {
		resp, err := c.Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
	}
	_, err := clients[2].Get(srv.URL)
	require.ErrorIs(t, err, errPrepare)
	assert.Equal(t, int32(1), failed.Load(), "PrepareRetry calls: no retry after its error")
	mu.Lock()
	assert.Equal(t, []string{"a", "b"}, seen, "each client's header; nothing sent for the failed one")
	mu.Unlock()

	c := retryablehttp.NewClient()
	c.PrepareRetry = func(*http.Request) error { return nil }
	own := signTransport(nil, 1)
	own.PrepareAttempt = func(*http.Request, int) error { return nil }
	err = (&Policy{}).Install(c, own)
	var ce *pace.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "PrepareAttempt", ce.Field)
	assert.NotNil(t, c.PrepareRetry, "client changed")
}
