package batch

import (
	"sync"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/redact"
)

// The bounds of a run's timeline, so that its memory stays bounded however
// long the run and however many keys (under 1 MB).
const (
	maxSeries   = 32                     // keys recorded apart; later keys are counted as "other"
	maxBuckets  = 600                    // buckets per key; past them, buckets double in width
	maxPauses   = 256                    // pauses drawn per key; later ones extend the last
	maxSteps    = 256                    // changes of the learned limit drawn per key; later ones replace the last
	firstBucket = 100 * time.Millisecond // a bucket's width at first
)

// What an event of the timeline is.
type eventKind int8

const (
	evSent      eventKind = iota // a request left (an attempt of an item function started)
	evThrottled                  // the server throttled an attempt
	evRefused                    // a client-side limit refused an attempt, nothing sent
	evRequeued                   // an item went back in line after a retryable failure
	evFailed                     // an item failed for good
	evInDoubt                    // an item ended in doubt
	numEvents
)

// bucket counts the events of one key in one stretch of time.
type bucket [numEvents]uint32

// step is a learned limit, in force from an offset of the run on.
type step struct {
	from time.Duration
	rate pace.Rate // the zero Rate: none
}

// span is a stretch of the run, from its start.
type span struct{ from, to time.Duration }

// series is the timeline of one key.
type series struct {
	raw     string          // the key as Run knows it: never shown, it may be a secret
	text    string          // the key as shown (redact.KeyText)
	tr      *pace.Transport // the Transport of the key's first request, or nil
	buckets []bucket
	pauses  []span
	learned []step // the limit learned from throttles (see learner), as it changed
	total   bucket // the counts of the whole run

	pace       time.Duration // the Transport's spacing for the key at the end (see pace.Stats), or 0
	paceSource string
}

// timeline records what a run did over time, per key: requests sent,
// throttles, refusals, requeues, failures and pauses. Safe for concurrent
// use: HTTP's requests report their departures from their own goroutines.
type timeline struct {
	mu      sync.Mutex
	start   time.Time
	end     time.Duration // the run's length, once it ended
	width   time.Duration // a bucket's width
	keys    map[string]*series
	order   []*series // in the order first seen
	other   *series   // the keys past maxSeries, or nil
	ceiling pace.Rate // Options.Rate
	hide    bool      // Options.HidePath
}

func newTimeline(start time.Time, ceiling pace.Rate, hidePath bool) *timeline {
	return &timeline{start: start, width: firstBucket, keys: make(map[string]*series), ceiling: ceiling, hide: hidePath}
}

// seriesOf returns key's series, making it if there is room, or else the
// "other" series. host says key is a request's host, shown as it is; tr is
// the client's Transport, or nil. tl.mu must be held.
func (tl *timeline) seriesOf(key string, host bool, tr *pace.Transport) *series {
	if s := tl.keys[key]; s != nil {
		return s
	}
	if len(tl.order) >= maxSeries {
		if tl.other == nil {
			tl.other = &series{text: "other keys"}
		}
		return tl.other
	}
	s := &series{raw: key, tr: tr}
	switch {
	case key == "":
		s.text = "all attempts" // the run's own key
	default:
		s.text, _ = redact.KeyText(key, host)
	}
	tl.keys[key] = s
	tl.order = append(tl.order, s)
	return s
}

// record counts one event of kind for key at t.
func (tl *timeline) record(key string, host bool, tr *pace.Transport, kind eventKind, t time.Time) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	s := tl.seriesOf(key, host, tr)
	i := tl.index(t.Sub(tl.start))
	for len(s.buckets) <= i {
		s.buckets = append(s.buckets, bucket{})
	}
	s.buckets[i][kind]++
	s.total[kind]++
}

// index returns the bucket of offset d, widening the buckets of every
// series while d lies past the last. tl.mu must be held.
func (tl *timeline) index(d time.Duration) int {
	d = max(d, 0)
	for d/tl.width >= maxBuckets {
		tl.width *= 2
		for _, s := range tl.all() {
			for j := range s.buckets {
				if j%2 == 0 {
					s.buckets[j/2] = s.buckets[j]
				} else {
					for k := range s.buckets[j] {
						s.buckets[j/2][k] += s.buckets[j][k]
					}
				}
			}
			s.buckets = s.buckets[:(len(s.buckets)+1)/2]
		}
	}
	return int(d / tl.width)
}

// all returns every series, "other" last.
func (tl *timeline) all() []*series {
	if tl.other == nil {
		return tl.order
	}
	return append(tl.order[:len(tl.order):len(tl.order)], tl.other)
}

// pause records that key is paused from t until until; a pause that is no
// news (a probe throttled again) extends the key's last one.
func (tl *timeline) pause(key string, host bool, news bool, t, until time.Time) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	s := tl.seriesOf(key, host, nil)
	sp := span{from: t.Sub(tl.start), to: until.Sub(tl.start)}
	switch n := len(s.pauses); {
	case n > 0 && (!news || n == maxPauses):
		s.pauses[n-1].to = max(s.pauses[n-1].to, sp.to)
	default:
		s.pauses = append(s.pauses, sp)
	}
}

// learnedAt records that key's learned limit is r at t, if it changed.
func (tl *timeline) learnedAt(key string, r pace.Rate, t time.Time) {
	if tl == nil {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	s := tl.keys[key]
	if s == nil {
		return // no event of the key yet, or one of the "other" keys
	}
	n := len(s.learned)
	switch {
	case n == 0 && r == (pace.Rate{}), n > 0 && s.learned[n-1].rate == r:
		return
	case n == maxSteps:
		s.learned[n-1].rate = r
		return
	}
	s.learned = append(s.learned, step{from: t.Sub(tl.start), rate: r})
}

// finish records that the run ended at now, and reads the pace in force for
// each key from its Transport's Stats.
func (tl *timeline) finish(now time.Time) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.end = now.Sub(tl.start)
	stats := map[*pace.Transport][]pace.Stats{}
	for _, s := range tl.order {
		if s.tr == nil {
			continue
		}
		st, ok := stats[s.tr]
		if !ok {
			st = s.tr.Stats()
			stats[s.tr] = st
		}
		for _, k := range st {
			if k.Key == s.raw {
				s.pace, s.paceSource = k.Pace, k.PaceSource
			}
		}
	}
}
