package batch

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/redact"
)

// The report's bounds and sizes.
const (
	shownKeys    = 6   // keys drawn apart; the rest are drawn together
	listedItems  = 10  // in-doubt and failed items listed by ID
	maxErrorText = 200 // bytes of a failed item's error text shown
	chartW       = 780 // a chart's width in pixels
	chartH       = 170 // a chart's height in pixels; a run of one key gets a taller one
	tallH        = 260
	plotL        = 46  // the plot area's left edge
	plotR        = 766 // the plot area's right edge
	plotT        = 28  // the plot area's top edge
	plotBelow    = 24  // the plot area's bottom edge, above the chart's
)

// WriteHTML writes r as one self-contained HTML page: for each key of the
// run, a chart of the requests sent per second over time, and the Summary
// beside it. The chart marks each throttle, refusal, requeue, failure and
// pause. It draws the limits known: the pace of the key's pace.Transport at
// the end of the run ([pace.Stats]), the limit learned from throttles, and
// Options.Rate. It fetches nothing and needs no
// script: the charts are inline SVG. The six busiest keys are drawn apart
// and the others together, as are all keys past the first 32 a run met.
// Requests are counted as they leave (net/http/httptrace), the client
// Transport's own retries included; an item function other than [HTTP]'s
// counts one request per attempt.
//
// Keys are shown as pace's logs show them: a host as it is, any other key
// (an API key, say) as a fingerprint. Error text is shown without URL
// queries, and without paths under Options.HidePath. Item IDs are shown.
//
// A Report that Run did not return has no timeline: the page then holds
// the Summary alone. WriteHTML returns w's error. It is safe to call
// while requests of the run are still leaving.
func (r *Report) WriteHTML(w io.Writer) error {
	return reportPage.Execute(w, r.view())
}

// pageView is what the page template shows.
type pageView struct {
	Title   string
	Summary [][2]string // label, value
	Keys    []keyView
	Width   string // bucket width, as the legend names it
	Ceiling string // Options.Rate, or ""
	InDoubt []string
	Failed  []failedView
	More    int // items failed or in doubt beyond those listed
	NoChart bool
}

type keyView struct {
	Key                                       string
	Sent, Throttled, Refused, Requeued, Fails int
	Pauses                                    int
	Pace                                      string // the Transport's, "75/s (configured)", or ""
	Learned                                   string // the last learned limit, "60/1.2s", or ""
	Chart                                     chartView
}

type failedView struct{ ID, Status, Err string }

// chartView is one key's SVG.
type chartView struct {
	W, H, L, R, T, B int
	PH               int        // B - T
	Bars             string     // the path of the requests sent in each bucket, per second, filled
	Window           string     // the path of the requests sent in the second up to each bucket's end
	Learned          string     // the path of the limit learned from throttles, or ""
	PaceY, CeilingY  int        // y of the Transport's pace and of Options.Rate; -1: none
	YTicks           []tickView // the y axis
	XTicks           []tickView // the x axis
	Pauses           []rectView
	Throttles        []markView
	Refusals         []markView
	Requeues         []markView
	Fails            []markView
}

type tickView struct {
	At    int
	Label string
}

type rectView struct{ X, W int }

type markView struct {
	X     int
	Count int
}

// view builds the page of r.
func (r *Report) view() pageView {
	s := r.Summary
	v := pageView{Title: fmt.Sprintf("batch run: %d items, %d succeeded", s.Items, s.Succeeded)}
	row := func(label string, n any) { v.Summary = append(v.Summary, [2]string{label, fmt.Sprint(n)}) }
	row("items", s.Items)
	row("succeeded", s.Succeeded)
	row("failed", s.Failed)
	row("in doubt", s.InDoubt)
	row("interrupted", s.Interrupted)
	row("not started", s.NotStarted)
	if s.Resumed > 0 || s.Redone > 0 {
		row("resumed", s.Resumed)
		row("redone", s.Redone)
	}
	row("throttled or refused", s.Throttled)
	row("pauses", s.Pauses)
	row("requeued", s.Requeued)
	row("retries", s.Retries)
	row("elapsed", s.Elapsed.Round(time.Millisecond))
	if s.Ideal > 0 {
		row("ideal", s.Ideal)
	}
	hide := false
	if r.tl != nil {
		hide = r.tl.hide
	}
	for _, res := range r.Results {
		switch {
		case res.Outcome == InDoubt && len(v.InDoubt) < listedItems:
			v.InDoubt = append(v.InDoubt, res.ID)
		case res.Outcome == Failed && len(v.Failed) < listedItems:
			f := failedView{ID: res.ID, Err: clip(redact.ErrorText(res.Err, hide), maxErrorText)}
			if res.Status != 0 {
				f.Status = strconv.Itoa(res.Status)
			}
			v.Failed = append(v.Failed, f)
		case res.Outcome == InDoubt || res.Outcome == Failed:
			v.More++
		}
	}
	if r.tl == nil {
		v.NoChart = true
		return v
	}
	r.tl.view(&v)
	return v
}

// view adds the charts of tl to v.
func (tl *timeline) view(v *pageView) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	v.Width = tl.width.String()
	ceiling := 0.0
	if tl.ceiling.N > 0 {
		v.Ceiling = tl.ceiling.String()
		ceiling = perSecond(tl.ceiling)
	}
	keys := slices.Clone(tl.order)
	slices.SortStableFunc(keys, func(a, b *series) int { return int(b.total[evSent]) - int(a.total[evSent]) })
	rest := tl.other
	if len(keys) > shownKeys {
		rest = tl.fold(keys[shownKeys:], rest)
		keys = keys[:shownKeys]
	}
	if rest != nil {
		keys = append(keys, rest)
	}
	n := max(int((tl.end+tl.width-1)/tl.width), 1)
	h := chartH
	if len(keys) == 1 {
		h = tallH
	}
	for _, s := range keys {
		kv := keyView{
			Key: s.text, Sent: int(s.total[evSent]), Throttled: int(s.total[evThrottled]),
			Refused: int(s.total[evRefused]), Requeued: int(s.total[evRequeued]),
			Fails: int(s.total[evFailed]), Pauses: len(s.pauses),
		}
		paced := 0.0
		if s.pace > 0 {
			paced = float64(time.Second) / float64(s.pace)
			kv.Pace = fmt.Sprintf("%.4g/s (%s)", paced, s.paceSource)
		}
		if k := len(s.learned); k > 0 && s.learned[k-1].rate.N > 0 {
			r := s.learned[k-1].rate
			kv.Learned = fmt.Sprintf("%d per %v", r.N, r.Per.Round(time.Millisecond))
		}
		kv.Chart = tl.chart(s, n, h, paced, ceiling)
		v.Keys = append(v.Keys, kv)
	}
}

// fold returns the series of keys and other counted together.
func (tl *timeline) fold(keys []*series, other *series) *series {
	f := &series{text: "other keys"}
	if other != nil {
		keys = append(keys[:len(keys):len(keys)], other)
	}
	for _, s := range keys {
		for len(f.buckets) < len(s.buckets) {
			f.buckets = append(f.buckets, bucket{})
		}
		for i, b := range s.buckets {
			for k := range b {
				f.buckets[i][k] += b[k]
				f.total[k] += b[k]
			}
		}
	}
	return f
}

// rates returns the requests s sent per second, bucket by bucket: in each
// bucket (bars), and in the second up to each bucket's end (window), as a
// limit of N in any second counts them; with buckets of a second or more,
// over the bucket.
func (tl *timeline) rates(s *series, n int) (bars, window []float64) {
	per := max(int(time.Second/tl.width), 1)
	secs := (time.Duration(per) * tl.width).Seconds()
	bars, window = make([]float64, n), make([]float64, n)
	sum := 0
	for i := range n {
		if i < len(s.buckets) {
			sum += int(s.buckets[i][evSent])
			bars[i] = float64(s.buckets[i][evSent]) / tl.width.Seconds()
		}
		if j := i - per; j >= 0 && j < len(s.buckets) {
			sum -= int(s.buckets[j][evSent])
		}
		window[i] = float64(sum) / secs
	}
	return bars, window
}

// perSecond returns r in requests per second.
func perSecond(r pace.Rate) float64 { return float64(r.N) / r.Per.Seconds() }

// chart draws s over n buckets, h pixels high, against the Transport's
// pace and the ceiling (per second; 0: none).
func (tl *timeline) chart(s *series, n, h int, paced, ceiling float64) chartView {
	plotB := h - plotBelow
	c := chartView{W: chartW, H: h, L: plotL, R: plotR, T: plotT, B: plotB, PH: plotB - plotT, PaceY: -1, CeilingY: -1}
	bars, window := tl.rates(s, n)
	top := max(slices.Max(bars), slices.Max(window), paced, ceiling, 1)
	for _, st := range s.learned {
		if st.rate.N > 0 {
			top = max(top, perSecond(st.rate))
		}
	}
	top *= 1.15
	x := func(i int) int { return plotL + i*(plotR-plotL)/n }
	y := func(v float64) int { return plotB - int(v/top*float64(plotB-plotT)+0.5) }
	steps := func(vs []float64, closed bool) string {
		var d strings.Builder
		fmt.Fprintf(&d, "M%d %d", plotL, plotB)
		for i, v := range vs {
			fmt.Fprintf(&d, " V%d H%d", y(v), x(i+1))
		}
		if closed {
			fmt.Fprintf(&d, " V%d Z", plotB)
		}
		return d.String()
	}
	c.Bars, c.Window = steps(bars, true), steps(window, false)
	if paced > 0 {
		c.PaceY = y(paced)
	}
	if ceiling > 0 {
		c.CeilingY = y(ceiling)
	}
	for _, v := range niceTicks(top) {
		c.YTicks = append(c.YTicks, tickView{At: y(v), Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	total := time.Duration(n) * tl.width
	step := tickStep(total)
	for t := time.Duration(0); t <= total; t += step {
		c.XTicks = append(c.XTicks, tickView{At: plotL + int(float64(plotR-plotL)*float64(t)/float64(total)), Label: t.String()})
	}
	px := func(d time.Duration) int {
		return plotL + int(float64(plotR-plotL)*float64(min(max(d, 0), total))/float64(total))
	}
	c.Learned = tl.learnedPath(s, px, y)
	for _, p := range s.pauses {
		c.Pauses = append(c.Pauses, rectView{X: px(p.from), W: max(px(p.to)-px(p.from), 1)})
	}
	for i, b := range s.buckets {
		mid := (x(i) + x(i+1)) / 2
		add := func(m *[]markView, k eventKind) {
			if b[k] > 0 {
				*m = append(*m, markView{X: mid, Count: int(b[k])})
			}
		}
		add(&c.Throttles, evThrottled)
		add(&c.Refusals, evRefused)
		add(&c.Requeues, evRequeued)
		add(&c.Fails, evFailed)
	}
	return c
}

// learnedPath returns the SVG path of s's learned limit over time, or "".
func (tl *timeline) learnedPath(s *series, px func(time.Duration) int, y func(float64) int) string {
	var d strings.Builder
	for i, st := range s.learned {
		if st.rate.N == 0 {
			continue
		}
		end := tl.end
		if i+1 < len(s.learned) {
			end = s.learned[i+1].from
		}
		fmt.Fprintf(&d, "M%d %d H%d ", px(st.from), y(perSecond(st.rate)), px(end))
	}
	return strings.TrimSpace(d.String())
}

// niceTicks returns three or four round values from 0 up to top.
func niceTicks(top float64) []float64 {
	step := 1.0
	for top/step > 5 {
		switch {
		case strconv.FormatFloat(step, 'f', -1, 64)[0] == '2':
			step *= 2.5
		default:
			step *= 2
		}
	}
	var out []float64
	for v := 0.0; v < top; v += step {
		out = append(out, v)
	}
	return out
}

// tickStep returns a round step that puts four to ten ticks on total.
func tickStep(total time.Duration) time.Duration {
	for _, s := range []time.Duration{
		100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	} {
		if total/s <= 10 {
			return s
		}
	}
	return 24 * time.Hour * max(total/(10*24*time.Hour), 1)
}

// clip cuts s to at most n bytes, at a rune's start.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

var reportPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:18px;margin:0 0 12px}
h2{font-size:14px;margin:12px 0 2px}
.page{display:flex;gap:20px;align-items:flex-start}
.charts{flex:0 0 780px}
.side{flex:1;min-width:0;overflow-wrap:anywhere}
table{border-collapse:collapse;margin-bottom:12px}
td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.legend span{display:inline-block;margin-right:12px}
.sw{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-right:4px}
svg text{font:11px system-ui,sans-serif;fill:#444}
code{font-size:12px}
</style></head><body>
<h1>{{.Title}}</h1>
<div class="page">
<div class="charts">
{{if .NoChart}}<p>No timeline: this Report was not returned by batch.Run.</p>{{else}}
<p class="legend"><span><i class="sw" style="background:#aec7e8"></i>requests sent per second, in steps of {{.Width}}</span><span><i class="sw" style="background:#1f77b4"></i>sent in the last second</span><span><i class="sw" style="background:#d62728"></i>the Transport's pace</span><span><i class="sw" style="background:#2ca02c"></i>limit learned from throttles</span>{{if .Ceiling}}<span><i class="sw" style="background:#7f7f7f"></i>Options.Rate {{.Ceiling}}, all keys</span>{{end}}<span><i class="sw" style="background:#f5c26b"></i>pause</span><span>▼ throttled</span><span>◆ requeued</span><span>| refused, nothing sent</span><span>✕ failed</span></p>
{{range .Keys}}<h2>{{.Key}}</h2>
<svg class="key" data-key="{{.Key}}" xmlns="http://www.w3.org/2000/svg" width="{{.Chart.W}}" height="{{.Chart.H}}" viewBox="0 0 {{.Chart.W}} {{.Chart.H}}" role="img" aria-label="requests sent per second for {{.Key}}">
{{template "chart" .Chart}}<text x="{{.Chart.L}}" y="14">sent {{.Sent}}, throttled {{.Throttled}}, pauses {{.Pauses}}, refused {{.Refused}}, requeued {{.Requeued}}, failed {{.Fails}}{{if .Pace}}; pace {{.Pace}}{{end}}{{if .Learned}}; learned {{.Learned}}{{end}}</text>
</svg>
{{end}}{{end}}
</div>
<div class="side">
<h2>Summary</h2>
<table>{{range .Summary}}<tr><th>{{index . 0}}</th><td class="n">{{index . 1}}</td></tr>{{end}}</table>
{{if .Keys}}<h2>Keys</h2>
<table class="keys"><tr><th>key</th><th>sent</th><th>throttled</th><th>pauses</th></tr>
{{range .Keys}}<tr><td><code>{{.Key}}</code></td><td class="n">{{.Sent}}</td><td class="n">{{.Throttled}}</td><td class="n">{{.Pauses}}</td></tr>
{{end}}</table>{{end}}
{{if .InDoubt}}<h2>In doubt</h2><p>{{range .InDoubt}}<code>{{.}}</code> {{end}}</p>{{end}}
{{if .Failed}}<h2>Failed</h2><table><tr><th>ID</th><th>status</th><th>error</th></tr>
{{range .Failed}}<tr><td><code>{{.ID}}</code></td><td>{{.Status}}</td><td>{{.Err}}</td></tr>
{{end}}</table>{{end}}
{{if .More}}<p>and {{.More}} more failed or in doubt</p>{{end}}
</div></div>
</body></html>
{{define "chart"}}<rect x="0" y="0" width="{{.W}}" height="{{.H}}" fill="#fff"/>
{{range .Pauses}}<rect class="pause" x="{{.X}}" y="{{$.T}}" width="{{.W}}" height="{{$.PH}}" fill="#f5c26b" fill-opacity="0.45"/>
{{end}}{{range .YTicks}}<line x1="{{$.L}}" x2="{{$.R}}" y1="{{.At}}" y2="{{.At}}" stroke="#eee"/><text x="{{$.L}}" dx="-4" y="{{.At}}" dy="4" text-anchor="end">{{.Label}}</text>
{{end}}<path class="sent" d="{{.Bars}}" fill="#aec7e8"/>
<path class="window" d="{{.Window}}" fill="none" stroke="#1f77b4" stroke-width="2"/>
{{if ge .PaceY 0}}<line class="pace" x1="{{.L}}" x2="{{.R}}" y1="{{.PaceY}}" y2="{{.PaceY}}" stroke="#d62728" stroke-width="2" stroke-dasharray="6 3"/>
{{end}}{{if .Learned}}<path class="learned" d="{{.Learned}}" fill="none" stroke="#2ca02c" stroke-width="2" stroke-dasharray="4 2"/>
{{end}}{{if ge .CeilingY 0}}<line class="ceiling" x1="{{.L}}" x2="{{.R}}" y1="{{.CeilingY}}" y2="{{.CeilingY}}" stroke="#7f7f7f" stroke-width="2" stroke-dasharray="2 3"/>
{{end}}<line x1="{{.L}}" x2="{{.R}}" y1="{{.B}}" y2="{{.B}}" stroke="#444"/>
{{range .XTicks}}<path d="M{{.At}} {{$.B}} v4" stroke="#444"/><text x="{{.At}}" y="{{$.B}}" dy="14" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Throttles}}<path class="throttle" d="M{{.X}} {{$.T}} l-5 -9 h10 z" fill="#d62728"><title>{{.Count}} throttled</title></path>
{{end}}{{range .Requeues}}<path class="requeue" d="M{{.X}} {{$.B}} l-5 -6 l5 -6 l5 6 z" fill="#9467bd"><title>{{.Count}} requeued</title></path>
{{end}}{{range .Refusals}}<path class="refusal" d="M{{.X}} {{$.T}} v10" stroke="#7f7f7f" stroke-width="2"><title>{{.Count}} refused</title></path>
{{end}}{{range .Fails}}<path class="fail" d="M{{.X}} {{$.B}} m-4 -14 l8 8 m0 -8 l-8 8" stroke="#000" stroke-width="2"><title>{{.Count}} failed</title></path>
{{end}}{{end}}`))
