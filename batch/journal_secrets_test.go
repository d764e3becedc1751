package batch

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/testhttp"
	"github.com/pacehttp/pace/retry"
)

// TestJournalHoldsNoURLSecrets: a new-user trial found a failed item's
// journal record, and the error Run returned, holding the request URL's
// user and query (`Put "http://user:***@127.0.0.1:1/x?api_key=…": …`).
// Both now hold the URL as scheme://host/path, and the journal file is
// readable by its owner only.
func TestJournalHoldsNoURLSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	refused := testhttp.RoundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, syscall.ECONNREFUSED })
	client := &http.Client{Transport: &pace.Transport{Base: refused, Retry: retry.Policy{MaxAttempts: 1}}}
	rep, err := Run(context.Background(), []int{1}, HTTP(client, func(ctx context.Context, _ int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, "PUT", "http://user:PASSW0RD@127.0.0.1:1/x?api_key=QUERYSECRET", nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer AUTHSECRET")
		}
		return req, err
	}, nil), Options{Journal: path, MaxRequeues: -1})
	require.Error(t, err)
	require.Equal(t, 1, rep.Summary.Failed)
	b, rerr := os.ReadFile(path)
	require.NoError(t, rerr)
	recs := readJournal(t, path)
	require.Len(t, recs, 1)
	assert.Contains(t, recs[0].Error, `Put "http://127.0.0.1:1/x": `, "the error is kept, its URL cut")
	for _, s := range []string{"QUERYSECRET", "PASSW0RD", "AUTHSECRET", "user"} {
		assert.NotContains(t, string(b), s, "journal")
		assert.NotContains(t, err.Error(), s, "returned error")
		assert.NotContains(t, rep.Results[0].Err.Error(), s, "Result.Err")
	}
	assert.ErrorIs(t, rep.Results[0].Err, syscall.ECONNREFUSED, "the redacted error still unwraps")
	var ue *url.Error
	require.ErrorAs(t, rep.Results[0].Err, &ue)
	assert.Equal(t, "http://127.0.0.1:1/x", ue.URL)
	st, serr := os.Stat(path)
	require.NoError(t, serr)
	assert.Zero(t, st.Mode().Perm()&0o077, "mode %v", st.Mode().Perm())
}

// TestJournalRedactsItemErrors: an item function's own error holding a
// *url.Error, however wrapped, reaches the journal with that URL cut.
func TestJournalRedactsItemErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	ue := &url.Error{Op: "Get", URL: "https://api.example/v1?access_token=TOKSECRET", Err: errors.New("boom")}
	_, err := Run(context.Background(), []int{1}, func(context.Context, int) error {
		return errors.Join(errors.New("sync failed"), ue)
	}, Options{Journal: path, MaxRequeues: -1})
	require.Error(t, err)
	recs := readJournal(t, path)
	require.Len(t, recs, 1)
	assert.Equal(t, "sync failed\nGet \"https://api.example/v1\": boom", recs[0].Error)
}
