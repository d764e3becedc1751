package realserver

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseEntry(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    Entry
		wantErr bool
	}{
		{"ok", `1733043600.123 200 7 2 0.000 "GET /x HTTP/1.1"`,
			Entry{Time: time.Unix(1733043600, 123e6), Status: 200, Conn: 7, ConnReqs: 2, Request: "GET /x HTTP/1.1"}, false},
		{"refused", `1733043600.005 429 1 1 0.001 "GET / HTTP/1.1"`,
			Entry{Time: time.Unix(1733043600, 5e6), Status: 429, Conn: 1, ConnReqs: 1, Duration: time.Millisecond, Request: "GET / HTTP/1.1"}, false},
		{"request line with spaces kept", `1.000 400 1 1 0.000 "a b c d"`,
			Entry{Time: time.Unix(1, 0), Status: 400, Conn: 1, ConnReqs: 1, Request: "a b c d"}, false},
		{"two decimals", `1733043600.12 200 1 1 0.000 "GET / HTTP/1.1"`, Entry{}, true},
		{"too few fields", `1733043600.123 200`, Entry{}, true},
		{"status not a number", `1.000 ok 1 1 0.000 "GET / HTTP/1.1"`, Entry{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEntry(tt.line)
			if tt.wantErr {
				assert.Error(t, err, "parseEntry(%q)", tt.line)
				return
			}
			require.NoError(t, err, "parseEntry(%q)", tt.line)
			assert.True(t, tt.want.Time.Equal(got.Time), "parseEntry(%q).Time = %v, want %v", tt.line, got.Time, tt.want.Time)
			got.Time, tt.want.Time = time.Time{}, time.Time{}
			assert.Equal(t, tt.want, got, "parseEntry(%q)", tt.line)
		})
	}
}

func TestGaps(t *testing.T) {
	t0 := time.Unix(1000, 0)
	es := []Entry{
		{Time: t0.Add(250 * time.Millisecond), Status: 200},
		{Time: t0, Status: 200},
		{Time: t0.Add(50 * time.Millisecond), Status: 429}, // not a 200: ignored
		{Time: t0.Add(100 * time.Millisecond), Status: 200},
	}
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 150 * time.Millisecond}, Gaps(es, 200))
	assert.Empty(t, Gaps(es[:1], 200))
}

func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	return resp.StatusCode
}

// nginx limit_req without burst refuses a request that comes right after
// an admitted one, and the access log says so.
func TestStartNginxLimitReq(t *testing.T) {
	n := StartNginx(t, NginxConf{Rate: "1r/s"})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}

	assert.Equal(t, http.StatusOK, get(t, c, n.URL()+"/a"))
	assert.Equal(t, http.StatusTooManyRequests, get(t, c, n.URL()+"/b"))
	tr.CloseIdleConnections()
	require.NoError(t, n.Stop())

	assert.Equal(t, map[int]int{200: 1, 429: 1}, n.Statuses())
	assert.Equal(t, 1, n.Count(http.StatusTooManyRequests))
	es, err := n.Entries()
	require.NoError(t, err)
	require.Len(t, es, 2)
	assert.Equal(t, "GET /a HTTP/1.1", es[0].Request)
	assert.Equal(t, es[0].Conn, es[1].Conn, "keep-alive: one connection")
	assert.Equal(t, 2, es[1].ConnReqs)
	assert.Contains(t, n.ErrorLog(), "limiting requests")
	assert.NoError(t, n.Stop(), "second Stop")
}

// burst=B nodelay lets B+1 requests through at once.
func TestStartNginxBurstNodelay(t *testing.T) {
	n := StartNginx(t, NginxConf{Rate: "1r/s", Burst: 2, NoDelay: true})
	conf, err := os.ReadFile(filepath.Join(n.Dir(), "nginx.conf"))
	require.NoError(t, err)
	assert.Contains(t, string(conf), "limit_req zone=z burst=2 nodelay;")

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var codes []int
	for range 4 {
		codes = append(codes, get(t, c, n.URL()))
	}
	assert.Equal(t, []int{200, 200, 200, 429}, codes)
	require.NoError(t, n.Stop())
	assert.Equal(t, map[int]int{200: 3, 429: 1}, n.Statuses())
}

// Under CI=true a missing binary fails the test instead of skipping it.
func TestUnavailable(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			ft := &fakeTB{TB: t}
			done := make(chan struct{})
			go func() { // unavailable ends its goroutine, as Skipf and Fatalf do
				defer close(done)
				unavailable(ft, "nginx not installed: %s", "x")
			}()
			<-done
			if ci == "true" {
				assert.True(t, ft.failed, "failed")
				assert.False(t, ft.skipped, "skipped")
				assert.True(t, strings.HasPrefix(ft.msg, "CI=true: nginx not installed"), ft.msg)
			} else {
				assert.True(t, ft.skipped, "skipped")
				assert.False(t, ft.failed, "failed")
			}
		})
	}
}

type fakeTB struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestStartRedis(t *testing.T) {
	r := StartRedis(t)
	reply, err := pingOnce(r.Addr())
	require.NoError(t, err)
	assert.Equal(t, "+PONG", reply)
	require.NoError(t, r.Stop())
	_, err = pingOnce(r.Addr())
	assert.Error(t, err, "PING after Stop")
	assert.NoError(t, r.Stop(), "second Stop")
}
