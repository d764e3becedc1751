package batch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// webhookSecret is the secret part of a Slack incoming-webhook URL
// (https://api.slack.com/messaging/webhooks:
// "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX").
const webhookSecret = "XXXXXXXXXXXXXXXXXXXXXXXX"

// hidePathRun posts three items to a webhook URL through HTTP and a
// pace.Transport, with Options.HidePath as hide: item 0's connection is
// refused (http.Client's *url.Error), item 1 gets a 404, item 2 a 200; a
// second run's item function returns a *url.Error of its own, wrapped. It
// returns the bytes of both journals and the text of every error Run
// returned or reported, with every error of their chains.
func hidePathRun(t *testing.T, hide bool) (journal string, errs []string) {
	dir := t.TempDir()
	base := testhttp.RoundTripperFunc(func(r *http.Request) (*http.Response, error) {
		switch r.Header.Get("X-Item") {
		case "0":
			return nil, syscall.ECONNREFUSED
		case "1":
			return testhttp.Response(http.StatusNotFound), nil
		}
		return testhttp.Response(http.StatusOK), nil
	})
	client := &http.Client{Transport: &pace.Transport{Base: base, Retry: retry.Policy{MaxAttempts: 1}, HidePath: hide}}
	hook := "https://hooks.slack.com/services/T00000000/B00000000/" + webhookSecret
	texts := func(err error) {
		for e := err; e != nil; e = errors.Unwrap(e) {
			errs = append(errs, e.Error(), fmt.Sprintf("%+v", e))
		}
	}
	opts := Options{Journal: filepath.Join(dir, "a.jsonl"), MaxRequeues: -1, HidePath: hide}
	rep, err := Run(context.Background(), []int{0, 1, 2}, HTTP(client, func(ctx context.Context, i int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", hook, strings.NewReader(`{"text":"hi"}`))
		if err == nil {
			req.Header.Set("X-Item", fmt.Sprint(i))
		}
		return req, err
	}, nil), opts)
	require.Error(t, err)
	require.Equal(t, 2, rep.Summary.Failed)
	require.Equal(t, 1, rep.Summary.Succeeded)
	texts(err)
	var ue *url.Error
	require.ErrorAs(t, rep.Results[0].Err, &ue, "http.Client's error, cut, still unwraps")
	assert.ErrorIs(t, rep.Results[0].Err, syscall.ECONNREFUSED)
	for _, r := range rep.Results {
		texts(r.Err)
	}

	own := &url.Error{Op: "Post", URL: hook, Err: errors.New("boom")}
	opts.Journal = filepath.Join(dir, "b.jsonl")
	_, err = Run(context.Background(), []int{0}, func(context.Context, int) error {
		return fmt.Errorf("notify: %w", own)
	}, opts)
	require.Error(t, err)
	for _, name := range []string{"a.jsonl", "b.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		journal += string(b)
	}
	return journal, errs
}

// TestHidePathKeepsWebhookSecretOut: with Options.HidePath, a secret in
// the URL path is in neither journal, nor in the text of any error Run
// returns or reports for HTTP's requests; without it, both hold the path,
// as documented.
func TestHidePathKeepsWebhookSecretOut(t *testing.T) {
	journal, errs := hidePathRun(t, true)
	assert.NotContains(t, journal, webhookSecret)
	assert.Contains(t, journal, `Post \"https://hooks.slack.com/[redacted]\": `, "HTTP's error, its URL cut")
	assert.Contains(t, journal, `notify: Post \"https://hooks.slack.com/[redacted]\": boom`, "the item function's own *url.Error")
	require.NotEmpty(t, errs)
	for _, e := range errs {
		assert.NotContains(t, e, webhookSecret)
	}

	journal, errs = hidePathRun(t, false)
	assert.Contains(t, journal, "/services/T00000000/B00000000/"+webhookSecret)
	assert.Contains(t, strings.Join(errs, "\n"), webhookSecret)
}
