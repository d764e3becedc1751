package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestExactlyOnce charges 60 orders through the misbehaving API and checks
// that each was charged exactly once and the client holds that charge,
// although the API throttled, failed and dropped connections after
// charging (each at least once, so the retries were really exercised).
func TestExactlyOnce(t *testing.T) {
	const n = 60
	r, err := chargeAll(t.Context(), n, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	b := r.books
	if b.made != n {
		t.Errorf("the API made %d charges for %d orders", b.made, n)
	}
	for _, o := range r.orders {
		if got := b.perOrder[o.ID]; got != 1 {
			t.Errorf("order %s charged %d times, want 1", o.ID, got)
		}
	}
	if f := r.failed(); f != 0 {
		t.Errorf("%d orders failed on the client side, want 0", f)
	}
	if twice, missing, wrong := r.check(); twice+missing+wrong != 0 {
		t.Errorf("check() = %d twice, %d missing, %d wrong; want 0, 0, 0", twice, missing, wrong)
	}
	for name, c := range map[string]int{
		"throttled (429)":      b.throttled,
		"unavailable (503)":    b.unavailable,
		"dropped after charge": b.dropped,
		"503 after charge":     b.failedAfter,
		"replayed":             b.replayed,
	} {
		if c == 0 {
			t.Errorf("the API never %s: the test did not exercise it", name)
		}
	}
	// Every charge made with trouble after it was answered by a replay.
	if b.replayed < b.dropped+b.failedAfter {
		t.Errorf("%d replays for %d charges whose answer was lost", b.replayed, b.dropped+b.failedAfter)
	}
}

// TestRunOutput checks the program's exit code and closing line.
func TestRunOutput(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"-n", "20"}, &out, &errb); code != 0 {
		t.Errorf("run = %d, want 0; output:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "OK: 20 orders, 20 charges: every order charged exactly once\n") {
		t.Errorf("output lacks the OK line:\n%s", out.String())
	}
	if errb.Len() != 0 {
		t.Errorf("stderr = %q, want nothing", errb.String())
	}
}

// TestSummaryUnambiguous: the summary of a run that ended OK must not say
// "failed" of the API's faults, which the client retried: they are listed
// as retried faults, and the orders that failed are counted on their own
// row (none here).
func TestSummaryUnambiguous(t *testing.T) {
	var out bytes.Buffer
	if code := run(t.Context(), nil, &out, new(bytes.Buffer)); code != 0 {
		t.Fatalf("run = %d, want 0; output:\n%s", code, out.String())
	}
	summary := out.String()[strings.Index(out.String(), "\nsummary\n"):]
	for line := range strings.Lines(summary) {
		if strings.HasPrefix(line, "  failed") {
			t.Errorf("summary line %q: \"failed\" without saying what failed and that it was retried", line)
		}
	}
	for _, want := range []string{
		"\n  faults (retried)    ", " throttled: 429 before processing", " unavailable: 503 before processing",
		" charged, then answered 503", " charged, then the connection dropped",
		"\n  orders failed       0: every order ended with its charge\n",
		"\n  charged twice       0 orders\n", "\n  not charged         0 orders\n",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

// TestFlags checks the command line: -h prints the help on stdout and
// exits 0; an unknown flag, a stray argument or a bad -n gets one line on
// stderr and exit code 2, with nothing charged (nothing on stdout).
func TestFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"-h"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "\n  -n ") || errb.Len() != 0 {
		t.Errorf("run(-h) = %d, stdout %q, stderr %q; want 0 and the flags on stdout", code, out.String(), errb.String())
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-bogus"}, "-bogus"},
		{[]string{"stray"}, "unexpected argument \"stray\""},
		{[]string{"-n", "0"}, "-n must be"},
		{[]string{"-n", "10001"}, "-n must be"},
		{[]string{"-n", "many"}, "-n"},
		{[]string{"-n"}, "-n"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(t.Context(), tt.args, &out, &errb)
		msg := errb.String()
		if code != 2 || out.Len() != 0 || strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") || !strings.Contains(msg, tt.want) {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want 2, nothing, one line mentioning %q", tt.args, code, out.String(), msg, tt.want)
		}
	}
}

// TestFakeAPIRules checks the fake's idempotency rules in order, with a
// client that never retries (no keep-alive, so net/http does not resend a
// request on a reused connection either): a request without a key or with a
// malformed body is refused; the first charge made has its connection
// dropped (the fault schedule); the same key and request again is a replay
// of that charge; the same key with another request is refused, and only
// one charge is made in all.
func TestFakeAPIRules(t *testing.T) {
	api := newFakeAPI()
	defer api.close()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	const a = `{"order":"o1","customer":"c","amount":100,"currency":"eur"}`
	const b = `{"order":"o1","customer":"c","amount":999,"currency":"eur"}`
	steps := []struct {
		name, key, body string
		want            int // 0: the connection is dropped
	}{
		{"no key", "", a, http.StatusBadRequest},
		{"malformed body", "k1", "{", http.StatusBadRequest},
		{"first charge", "k1", a, 0},
		{"same key, same request", "k1", a, http.StatusOK},
		{"same key, other request", "k1", b, http.StatusUnprocessableEntity},
	}
	for _, st := range steps {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, api.srv.URL+"/v1/charges", strings.NewReader(st.body))
		if err != nil {
			t.Fatal(err)
		}
		if st.key != "" {
			req.Header.Set("Idempotency-Key", st.key)
		}
		resp, err := client.Do(req)
		switch {
		case err != nil && st.want != 0:
			t.Errorf("%s: %v, want status %d", st.name, err, st.want)
		case err == nil:
			resp.Body.Close()
			if resp.StatusCode != st.want {
				t.Errorf("%s: status %d, want %d (0: dropped)", st.name, resp.StatusCode, st.want)
			}
		}
	}
	if l := api.ledger(); l.made != 1 || l.perOrder["o1"] != 1 || l.replayed != 1 {
		t.Errorf("the API made %d charges, %d for o1, %d replays; want 1, 1, 1", l.made, l.perOrder["o1"], l.replayed)
	}
}
