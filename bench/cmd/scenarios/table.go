package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// column is one extra column of a scenario's table.
type column struct {
	name  string
	value func(result) string
}

var (
	colPerSecond = column{"server req/s", func(r result) string { return fmt.Sprintf("%.1f", r.server.perSecond()) }}
	col503       = column{"503s sent", func(r result) string { return fmt.Sprint(r.server.s503) }}
	colDrops     = column{"drops", func(r result) string { return fmt.Sprint(r.server.drops) }}
)

// printTable writes sc's results as a markdown table, then why calls
// failed, per library.
func printTable(w io.Writer, sc *scenario, rs []result, runs int) {
	fmt.Fprintf(w, "### %s\n\n%s.\n\n", sc.name, sc.about)
	head := []string{"library", "elapsed", "elapsed/ideal", "requests (server)", "429s (server)",
		"arrived during announced pause", "failed calls", "caller latency median / max"}
	for _, c := range sc.extra {
		head = append(head, c.name)
	}
	row(w, head)
	seps := make([]string, len(head))
	for i := range seps {
		seps[i] = "---"
	}
	row(w, seps)
	for _, r := range rs {
		name := r.peer
		if runs > 1 {
			name = fmt.Sprintf("%s #%d", r.peer, r.run)
		}
		ratio := "—"
		if sc.ideal > 0 {
			ratio = fmt.Sprintf("%.3f", r.elapsed.Seconds()/sc.ideal.Seconds())
		}
		med, top := medianMax(r.latency)
		cells := []string{name, secs(r.elapsed), ratio, fmt.Sprint(r.server.arrivals), fmt.Sprint(r.server.s429),
			fmt.Sprint(r.server.inPause), fmt.Sprintf("%d / %d", r.failed, len(r.latency)),
			secs(med) + " / " + secs(top)}
		for _, c := range sc.extra {
			cells = append(cells, c.value(r))
		}
		row(w, cells)
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		if r.failed == 0 {
			continue
		}
		name := r.peer
		if runs > 1 {
			name = fmt.Sprintf("%s #%d", r.peer, r.run)
		}
		var parts []string
		for _, why := range slices.Sorted(maps.Keys(r.reasons)) {
			parts = append(parts, fmt.Sprintf("%d × %s", r.reasons[why], why))
		}
		fmt.Fprintf(w, "- %s failed: %s\n", name, strings.Join(parts, "; "))
		if len(r.gaveUp) > 0 {
			parts = parts[:0]
			for _, why := range slices.Sorted(maps.Keys(r.gaveUp)) {
				parts = append(parts, fmt.Sprintf("%d × %s", r.gaveUp[why], why))
			}
			fmt.Fprintf(w, "  - %s gave up (OnEvent): %s\n", name, strings.Join(parts, "; "))
		}
	}
	fmt.Fprintln(w)
}

func row(w io.Writer, cells []string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}

func secs(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func medianMax(ds []time.Duration) (median, top time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		median = s[n/2]
	} else {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return median, s[n-1]
}
