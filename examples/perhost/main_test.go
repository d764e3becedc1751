package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPerHost sends the program's requests and checks counts and order, not
// times: every request arrives; the unpaced host never waits and the paced
// ones do; the token bucket (burst 5) makes at most one of 6 wait; and the
// hosts finish in the order their limits imply: the unpaced host first,
// then each unlisted host under the default of 10/s (6 requests: 0.5s;
// had they shared one state, 12 requests would take 1.1s), then the
// payments host at 5/s (1s).
func TestPerHost(t *testing.T) {
	rep, err := send(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.errs) != 0 {
		t.Fatalf("%d requests failed, the first: %v", len(rep.errs), rep.errs[0])
	}
	for _, h := range hosts {
		if n := len(rep.arrivals[h]); n != perHost {
			t.Errorf("%s: %d requests arrived, want %d", h, n, perHost)
		}
	}
	if n := rep.waits["internal.example"]; n != 0 {
		t.Errorf("internal.example is not paced, yet %d requests waited", n)
	}
	for _, h := range []string{"api.payments.example", "maps.example", "cdn.example"} {
		if rep.waits[h] == 0 {
			t.Errorf("%s: no request waited for its leaky bucket", h)
		}
	}
	if n := rep.waits["api.search.example"]; n > 1 {
		t.Errorf("api.search.example: %d requests waited, want at most 1 (burst 5 of 6)", n)
	}

	last := func(h string) time.Time { as := rep.arrivals[h]; return as[len(as)-1] }
	order := []string{"internal.example", "maps.example", "api.payments.example"}
	for i := 1; i < len(order); i++ {
		if !last(order[i-1]).Before(last(order[i])) {
			t.Errorf("%s finished after %s", order[i-1], order[i])
		}
	}
	if !last("cdn.example").Before(last("api.payments.example")) {
		t.Errorf("cdn.example finished after api.payments.example")
	}
}

// TestRunOutput checks the exit code and that every host is reported.
func TestRunOutput(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), nil, &out, &errb); code != 0 || errb.Len() != 0 {
		t.Fatalf("run = %d, stderr %q, want 0 and nothing; output:\n%s", code, errb.String(), out.String())
	}
	for _, h := range hosts {
		if !strings.Contains(out.String(), "\n"+h+" ") {
			t.Errorf("output lacks host %s:\n%s", h, out.String())
		}
	}
}

// TestFlags checks the command line: -h prints the help on stdout and
// exits 0; any other flag, or any argument, gets one line on stderr and
// exit code 2, with nothing sent (nothing on stdout).
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}} {
		var out, errb bytes.Buffer
		if code := run(t.Context(), args, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "Usage: ") || errb.Len() != 0 {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want 0 and the help on stdout", args, code, out.String(), errb.String())
		}
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-bogus"}, "-bogus"},
		{[]string{"-n", "3"}, "-n"},
		{[]string{"stray"}, "unexpected argument \"stray\""},
		{[]string{"--", "-h"}, "unexpected argument \"-h\""},
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
