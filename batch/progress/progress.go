// Package progress shows the progress of a [batch.Run]: a progress bar on a
// terminal (drawn by github.com/schollz/progressbar), plain periodic lines
// anywhere else (logs, CI), and the final summary.
//
// It lives apart from package batch so that programs that do not show
// progress do not import a terminal library.
//
//	pr := &progress.Printer{Title: "invoices"}
//	rep, err := batch.Run(ctx, items, send, batch.Options{OnProgress: pr.Update})
//	if rep == nil {
//		return err // invalid options or journal: nothing ran
//	}
//	pr.Finish(rep.Summary)
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pacehttp/pace/batch"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Mode chooses how a [Printer] shows progress.
type Mode int

const (
	// Auto draws a bar when Out is a terminal and prints lines otherwise.
	Auto Mode = iota
	// Bar always draws a bar, redrawn in place with carriage returns.
	Bar
	// Lines always prints plain lines.
	Lines
)

// DefaultEvery is the longest time between two plain lines while items
// finish, when Printer.Every is zero.
const DefaultEvery = time.Second

// Printer shows the progress of one batch run. Pass its Update method as
// batch.Options.OnProgress, and call Finish with the run's summary. The zero
// value prints to standard output, as a bar if that is a terminal. A
// Printer is safe for concurrent use; use one per run.
//
// In line mode it prints a line when a tenth of the items has finished
// since the last line, when Every has passed since the last line and some
// item has finished, and whenever dispatch pauses for a throttle or resumes.
type Printer struct {
	Out   io.Writer     // where to write; nil means os.Stdout
	Mode  Mode          // Auto, Bar or Lines
	Every time.Duration // line mode: longest gap between lines; 0 means DefaultEvery
	Title string        // shown before the counts, e.g. "invoices"; may be empty

	mu    sync.Mutex
	begun bool
	lines bool                     // line mode chosen
	bar   *progressbar.ProgressBar // bar mode, once there are items
	last  time.Time                // when the last line was printed
	tenth int                      // tenths of the items done at the last line
	done  int                      // items finished at the last line
}

func (pr *Printer) out() io.Writer {
	if pr.Out == nil {
		return os.Stdout
	}
	return pr.Out
}

// begin chooses the mode and sets up the bar on the first report.
func (pr *Printer) begin(items int, elapsed time.Duration) {
	pr.begun = true
	pr.last = time.Now().Add(-elapsed) // when the run started
	switch pr.Mode {
	case Lines:
		pr.lines = true
	case Bar:
		pr.lines = false
	default:
		pr.lines = !isTerminal(pr.out())
	}
	if !pr.lines && items > 0 {
		pr.bar = progressbar.NewOptions(items,
			progressbar.OptionSetWriter(pr.out()),
			progressbar.OptionSetDescription(pr.Title),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// finished counts the items that have reached their end.
func finished(s batch.Summary) int { return s.Succeeded + s.Failed + s.Interrupted + s.InDoubt }

// Update shows p: it redraws the bar, or prints a line when one is due (see
// [Printer]). It has the signature of batch.Options.OnProgress, and is safe
// for concurrent use.
func (pr *Printer) Update(p batch.Progress) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if !pr.begun {
		pr.begin(p.Items, p.Elapsed)
	}
	done := finished(p.Summary)
	if pr.bar != nil {
		pr.bar.Describe(pr.describe(p))
		_ = pr.bar.Set(done)
		return
	}
	if !pr.lines {
		return
	}
	now := time.Now()
	tenth := 0
	if p.Items > 0 {
		tenth = done * 10 / p.Items
	}
	every := pr.Every
	if every <= 0 {
		every = DefaultEvery
	}
	pauseEvent := p.Index < 0
	if !pauseEvent && tenth <= pr.tenth && (now.Sub(pr.last) < every || done == pr.done) {
		return
	}
	pr.last, pr.tenth, pr.done = now, tenth, done
	fmt.Fprintln(pr.out(), pr.line(p, now))
}

// describe is the bar's description: the title and what is worth knowing.
func (pr *Printer) describe(p batch.Progress) string {
	var parts []string
	if pr.Title != "" {
		parts = append(parts, pr.Title)
	}
	if p.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", p.Failed))
	}
	if p.InDoubt > 0 {
		parts = append(parts, fmt.Sprintf("%d in doubt", p.InDoubt))
	}
	if p.Throttled > 0 {
		parts = append(parts, fmt.Sprintf("%d throttled", p.Throttled))
	}
	if p.Paused {
		parts = append(parts, "paused")
	}
	return strings.Join(parts, ", ")
}

// line formats one plain progress line.
func (pr *Printer) line(p batch.Progress, now time.Time) string {
	var b strings.Builder
	if pr.Title != "" {
		b.WriteString(pr.Title + ": ")
	}
	done := finished(p.Summary)
	pct := 100
	if p.Items > 0 {
		pct = done * 100 / p.Items
	}
	fmt.Fprintf(&b, "%d/%d done (%d%%): %d succeeded, %d failed", done, p.Items, pct, p.Succeeded, p.Failed)
	if p.InDoubt > 0 {
		fmt.Fprintf(&b, ", %d in doubt", p.InDoubt)
	}
	fmt.Fprintf(&b, ", %d throttled; elapsed %v", p.Throttled, p.Elapsed.Round(100*time.Millisecond))
	switch {
	case p.Paused:
		// The pause may have ended by the time the line is printed (the
		// update raced with its end): never a negative pause.
		if left := p.Until.Sub(now).Round(100 * time.Millisecond); left > 0 {
			fmt.Fprintf(&b, "; throttled, paused for %v", left)
		} else {
			b.WriteString("; throttled, resuming")
		}
	case p.Index < 0:
		b.WriteString("; resumed")
	}
	return b.String()
}

// Finish ends the bar, if one is drawn, and prints the run's summary on a
// line of its own, "<Title> done: <s>", elapsed time rounded to a tenth of
// a second. Call it once, after Run returns.
func (pr *Printer) Finish(s batch.Summary) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.bar != nil {
		if finished(s) == s.Items {
			_ = pr.bar.Finish()
		} else {
			_ = pr.bar.Exit()
		}
		fmt.Fprintln(pr.out())
		pr.bar = nil
	}
	s.Elapsed = s.Elapsed.Round(100 * time.Millisecond)
	title := "done"
	if pr.Title != "" {
		title = pr.Title + " done"
	}
	fmt.Fprintf(pr.out(), "%s: %v\n", title, s)
}
