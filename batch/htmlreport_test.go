package batch

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/pacehttp/pace"
)

// throttleOnce is a loopback API that throttles its first request with a
// 100 ms delay (retry-after-ms) and accepts the rest.
func throttleOnce(t *testing.T) *httptest.Server {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("retry-after-ms", "100")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// reportOfRun runs 40 GETs through client against srv and returns the
// Report's page.
func reportOfRun(t *testing.T, srv *httptest.Server, client *http.Client) (*Report, string) {
	t.Helper()
	build := func(ctx context.Context, i int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/items/%d?api_key=QUERYSECRET", srv.URL, i), nil)
	}
	rep, err := Run(context.Background(), ints(40), HTTP(client, build, nil), Options{Concurrency: 4})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, rep.WriteHTML(&b))
	return rep, b.String()
}

// svgs returns the key charts of page, by their data-key.
func svgs(t *testing.T, page string) map[string]*html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	require.NoError(t, err)
	out := map[string]*html.Node{}
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "svg" && attr(n, "class") == "key" {
			out[attr(n, "data-key")] = n
		}
	}
	return out
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// within returns the elements of tag and class under n.
func within(n *html.Node, tag, class string) []*html.Node {
	var out []*html.Node
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && c.Data == tag && attr(c, "class") == class {
			out = append(out, c)
		}
	}
	return out
}

// TestWriteHTMLDrawsRun: the report of a real run over loopback whose
// server throttles once holds the key's chart (the host, as it is), with
// its series of requests sent drawn, one throttle marked, and the pause
// it caused; the limit of the client's pace.Transport is drawn as a line.
// The summary table is beside it, and no query string (with its API key)
// is anywhere.
func TestWriteHTMLDrawsRun(t *testing.T) {
	srv := throttleOnce(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	tr := &pace.Transport{Limits: pace.Hosts{host: {Limit: pace.LeakyBucket(pace.PerSecond(200), pace.LeakyOptions{})}}}
	defer tr.CloseIdleConnections()
	rep, page := reportOfRun(t, srv, &http.Client{Transport: tr})
	require.Equal(t, 40, rep.Summary.Succeeded)
	require.Equal(t, 1, rep.Summary.Pauses)

	charts := svgs(t, page)
	require.Len(t, charts, 1, "one key")
	svg := charts[host]
	require.NotNil(t, svg, "the host is shown as it is")

	sent := within(svg, "path", "sent")
	require.Len(t, sent, 1)
	d := attr(sent[0], "d")
	assert.Contains(t, d, " V", "a drawn series")
	tallest := tallH - plotBelow // the y of the highest bar: the bottom when flat
	for _, m := range regexp.MustCompile(`V(\d+)`).FindAllStringSubmatch(d, -1) {
		y, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		tallest = min(tallest, y)
	}
	assert.Less(t, tallest, tallH-plotBelow-20, "bars of some height: %s", d)
	assert.Len(t, within(svg, "path", "throttle"), 1, "the one 429 is marked")
	assert.Len(t, within(svg, "rect", "pause"), 1, "the pause it caused")
	assert.Len(t, within(svg, "path", "window"), 1, "the requests sent in the last second")
	assert.Len(t, within(svg, "line", "pace"), 1, "the Transport's pace, 200/s")
	assert.Contains(t, page, "200/s (configured)")
	assert.Contains(t, page, "sent 41,", "every request that left, the throttled one included")
	assert.Contains(t, page, "<th>succeeded</th><td class=\"n\">40</td>", "the summary table")
	assert.NotContains(t, page, "QUERYSECRET")
	assert.NotContains(t, page, "<script")
	assert.NotContains(t, strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), "http://", "nothing is fetched")
}

// TestWriteHTMLKeyFingerprint: a key from Transport.Key, an API key, is
// shown as its fingerprint, never as it is.
func TestWriteHTMLKeyFingerprint(t *testing.T) {
	srv := throttleOnce(t)
	const secret = "sk_live_<b>SUPERSECRET</b>"
	tr := &pace.Transport{Key: func(*http.Request) string { return secret }}
	defer tr.CloseIdleConnections()
	_, page := reportOfRun(t, srv, &http.Client{Transport: tr})
	assert.NotContains(t, page, "SUPERSECRET")
	charts := svgs(t, page)
	require.Len(t, charts, 1)
	for k, svg := range charts {
		assert.True(t, strings.HasPrefix(k, "key~"), k)
		assert.Len(t, within(svg, "path", "throttle"), 1)
	}
}

// TestWriteHTMLFoldsKeys: past six keys, the quietest are drawn together
// as "other keys", and an item ID with markup in it is escaped.
func TestWriteHTMLFoldsKeys(t *testing.T) {
	fn := func(ctx context.Context, i int) error { return nil }
	rep, err := Run(context.Background(), ints(3), fn, Options{ID: func(i int) string { return fmt.Sprintf("<i>%d", i) }})
	require.NoError(t, err)
	now := time.Now()
	for k := range 9 {
		for range 10 - k {
			rep.tl.record(fmt.Sprintf("host%d.example", k), true, nil, evSent, now)
		}
	}
	rep.tl.record("host8.example", true, nil, evThrottled, now)
	rep.Results[0].Outcome, rep.Summary.InDoubt = InDoubt, 1
	var b bytes.Buffer
	require.NoError(t, rep.WriteHTML(&b))
	charts := svgs(t, b.String())
	require.Len(t, charts, shownKeys+1)
	for k := range shownKeys {
		assert.Contains(t, charts, fmt.Sprintf("host%d.example", k))
	}
	other := charts["other keys"]
	require.NotNil(t, other)
	assert.Len(t, within(other, "path", "throttle"), 1, "the folded keys' throttle")
	assert.Contains(t, b.String(), "&lt;i&gt;0")
	assert.NotContains(t, b.String(), "<i>0")
}

// TestTimelineBounded: however many keys and however long the run, the
// timeline keeps at most maxSeries keys and maxBuckets buckets each.
func TestTimelineBounded(t *testing.T) {
	start := time.Now()
	tl := newTimeline(start, pace.Rate{}, false)
	for k := range 1000 {
		tl.record(fmt.Sprint("key", k), false, nil, evSent, start.Add(time.Duration(k)*time.Minute))
	}
	tl.record("key0", false, nil, evSent, start.Add(240*time.Hour))
	assert.Len(t, tl.order, maxSeries)
	require.NotNil(t, tl.other)
	assert.EqualValues(t, 1000-maxSeries, tl.other.total[evSent])
	var sum uint32
	for _, s := range tl.all() {
		assert.LessOrEqual(t, len(s.buckets), maxBuckets)
		for _, b := range s.buckets {
			sum += b[evSent]
		}
	}
	assert.EqualValues(t, 1001, sum, "widening the buckets loses no count")
}

// TestWriteHTMLWithoutTimeline: a Report built by hand has the summary
// alone.
func TestWriteHTMLWithoutTimeline(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, (&Report{Summary: Summary{Items: 2, Succeeded: 2}}).WriteHTML(&b))
	assert.Contains(t, b.String(), "No timeline")
	assert.Empty(t, svgs(t, b.String()))
}
