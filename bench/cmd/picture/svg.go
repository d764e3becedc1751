package main

import (
	"fmt"
	"html"
	"math"
	"net/http"
	"strings"
	"time"
)

// Layout of the picture, in SVG units (pixels).
const (
	width   = 960
	left    = 56 // room for the y axis's labels
	right   = 28
	panelH  = 150 // a run's bars
	rugH    = 22  // a run's arrivals, one tick each
	titleH  = 26
	gapH    = 44 // between runs: the x axis's labels and the next title
	bottomH = 56
)

// svg draws each run as a panel: arrivals at nginx per second (200s blue,
// 429s red, stacked) against the limit (dashed), and below them one tick
// per arrival, a 429's red. Every panel shares the time axis.
func svg(runs []run, perSecond int, caption []string) string {
	var end time.Duration
	top := perSecond + perSecond/2
	bins := make([][][2]int, len(runs))
	for _, r := range runs {
		for _, a := range r.arrivals {
			end = max(end, a.at)
		}
	}
	secs := int(end/time.Second) + 1
	for i, r := range runs {
		bins[i] = make([][2]int, secs)
		for _, a := range r.arrivals {
			b := &bins[i][int(a.at/time.Second)]
			if a.status == http.StatusTooManyRequests {
				b[1]++
			} else {
				b[0]++
			}
		}
		for _, b := range bins[i] {
			top = max(top, b[0]+b[1])
		}
	}
	plotW := float64(width - left - right)
	x := func(d time.Duration) float64 { return left + plotW*d.Seconds()/float64(secs) }
	height := len(runs)*(titleH+panelH+rugH+gapH) + bottomH

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	y0 := 0
	for i, r := range runs {
		ok, refused := counts(r.arrivals)
		title := fmt.Sprintf("%s: %d arrivals at nginx, %d × 200, %d × 429; %d requests failed; done in %.1f s",
			r.name, len(r.arrivals), ok, refused, r.failed, r.elapsed.Seconds())
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", left, y0+18, html.EscapeString(title))
		py := float64(y0 + titleH) // top of the bars
		y := func(v int) float64 { return py + panelH - panelH*float64(v)/float64(top) }
		// y axis: a grid line every perSecond/2.
		step := max(perSecond/2, 1)
		for v := 0; v <= top; v += step {
			fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, width-right, y(v), y(v))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n", left-6, y(v)+4, v)
		}
		fmt.Fprintf(&b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">arrivals / s</text>`+"\n", py+panelH/2)
		bw := plotW / float64(secs)
		for s, c := range bins[i] {
			bx := left + bw*float64(s) + 1
			if c[0] > 0 {
				fmt.Fprintf(&b, `<rect class="ok" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#4a7ebb"/>`+"\n", bx, y(c[0]), bw-2, y(0)-y(c[0]))
			}
			if c[1] > 0 {
				fmt.Fprintf(&b, `<rect class="refused" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d62728"/>`+"\n", bx, y(c[0]+c[1]), bw-2, y(c[0])-y(c[0]+c[1]))
			}
		}
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#222" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", left, width-right, y(perSecond), y(perSecond))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#222">limit %d/s</text>`+"\n", width-right-4, y(perSecond)-4, perSecond)
		// The rug: one tick per arrival.
		ry := py + panelH + 4
		fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%.0f" height="%d" fill="#f4f4f4"/>`+"\n", left, ry, plotW, rugH-6)
		for _, a := range r.arrivals {
			color, h := "#4a7ebb", float64(rugH-10)
			if a.status == http.StatusTooManyRequests {
				color, h = "#d62728", float64(rugH-6)
			}
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x(a.at), x(a.at), ry+float64(rugH-6)-h, ry+float64(rugH-6), color)
		}
		// x axis.
		ay := ry + float64(rugH-6)
		every := int(math.Max(1, math.Ceil(float64(secs)/20)))
		for s := 0; s <= secs; s += every {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d s</text>`+"\n", x(time.Duration(s)*time.Second), ay+16, s)
		}
		y0 += titleH + panelH + rugH + gapH
	}
	// Legend and caption.
	ly := y0 - 8
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="#4a7ebb"/><text x="%d" y="%d">200</text>`+"\n", left, ly, left+16, ly+10)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="#d62728"/><text x="%d" y="%d">429 (limit_req refused it)</text>`+"\n", left+60, ly, left+76, ly+10)
	fmt.Fprintf(&b, `<text x="%d" y="%d">ticks: each arrival at nginx</text>`+"\n", left+260, ly+10)
	for i, c := range caption {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555" font-size="11">%s</text>`+"\n", left, ly+30+14*i, html.EscapeString(c))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
