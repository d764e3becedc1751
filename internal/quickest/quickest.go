// Package quickest keeps the quickest of a key's recent answer times, for
// the rule that an answer later than that came from a server that got to
// the request late (and may have counted it late). pace.Keyed and package
// redislimit both apply the rule.
package quickest

// Run is how many answers one window holds: the quickest answer is taken
// over the latest Run to 2×Run answers, so that it follows a server whose
// answers slow down for good.
const Run = 8

// Window holds the quickest answer of the previous Run answers and of
// those since. The zero Window has seen none. It is not safe for
// concurrent use: its owner's lock guards it.
type Window struct {
	prev, cur int64  // the quickest rtt plus 1 of each; 0: none
	n         uint32 // answers in cur
}

// Late records an answer that came rtt (ns) after its request was
// written, and returns how much later than the quickest recent answer it
// came (0 for the quickest, and for a negative rtt, which it ignores).
func (w *Window) Late(rtt int64) int64 {
	if rtt < 0 {
		return 0
	}
	rtt++ // stored one more, so that 0 names none
	if w.cur == 0 || rtt < w.cur {
		w.cur = rtt
	}
	quickest := w.cur
	if w.prev > 0 {
		quickest = min(quickest, w.prev)
	}
	if w.n++; w.n >= Run {
		w.prev, w.cur, w.n = w.cur, 0, 0
	}
	return rtt - quickest
}

// Cap returns the most that a late answer may count, for a key whose
// departure margin grows to widest (in any unit; the result is in the
// same): twice widest. A server that stamps arrivals when its worker wakes
// (nginx limit_req) may stamp a request later than the widest margin
// (docs/pacing.md, "The margin learns the server"). A server whose answers
// vary for other reasons costs a client held to its limit at most this
// much per request.
func Cap(widest int64) int64 { return 2 * widest }

// Known reports whether the window has had Run/2 answers: before that its
// quickest may itself have come late (a server's first answers often do),
// so Late can say too little.
func (w *Window) Known() bool { return w.prev > 0 || w.n >= Run/2 }
