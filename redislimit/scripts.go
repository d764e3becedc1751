package redislimit

import (
	"embed"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The scripts share their conventions. Instants and durations are whole
// microseconds, read from Redis's own clock (TIME), so that the clocks of
// the machines that share a limit play no part. Every number stays below
// 2^53, where Lua's doubles are exact (see maxMicros). Numbers written into
// a string value are formatted by string.format('%d') (which Redis's
// 64-bit Lua 5.1 prints through a C long), never left to Lua's
// number-to-string conversion, which prints large integers in exponent
// form; a number passed to redis.call as an argument (a TTL, a score) is
// exact as it is: Redis prints it with 17 significant digits. Strings are
// read as numbers by arithmetic coercion (x + 0), which costs less than a
// call of tonumber, where the string is the script's own argument; a
// key's value, which anyone with access to Redis may have written, is read
// by tonumber, which gives nil for what is not a number instead of failing
// the script.
//
// KEYS[1] is the key's throttle, a string of 8 numbers (see luaThrottle):
// u the end of its pause, l the pause's length, g its count of pauses (the
// generation), s its strikes, p its throttled probe answers, h 1 while
// half-open (2 after a pause without a probe, a spent quota's, until the
// first decision after it), q the end of the probe's lease (at most now:
// no probe in flight; 0 also when none was elected since the pause), i
// the lease's number. KEYS[2..] hold the limit's parts, one key per part,
// then the learned record (see luaLearned), all in the slot of one hash
// tag: a string "TAT latest" (µs) for a token
// bucket or pacer (GCRA), or "TAT" alone when latest is TAT − interval
// (see setPair), "window count" for a fixed window, a sorted set of
// booked instants for a sliding log.
//
// State is checked before it is used, in a few comparisons: a value no
// decision could have written (an instant beyond now plus the part's span,
// [part].c: planted, or left by a node whose clock was ahead of this
// one's; a string that is no number; a count out of range) is repaired in
// the same script and written back with a TTL within the span, so that a
// key recovers by itself. An instant beyond its bound is moved to the
// bound (strict: nothing booked before is overtaken), an unreadable value
// counts as the whole limit used at now. A key of another type (someone
// else's data under the prefix) is left alone and the decision answers
// {5, 0, index of the key in KEYS, 0}, booking nothing.
// luaFiles holds the scripts' Lua, in sections (see lua/state.lua).
//
//go:embed lua/*.lua
var luaFiles embed.FS

// luaText returns the section name of lua/file: its lines from the line
// "--- @name" to the next section, without comment lines (those starting
// with "--", which the scripts' code never does). A missing section is
// the package's bug: it panics, when the package is initialised.
func luaText(file, name string) string {
	b, err := luaFiles.ReadFile("lua/" + file)
	if err != nil {
		panic("redislimit: " + err.Error())
	}
	var out strings.Builder
	in, found := false, false
	for _, line := range strings.SplitAfter(string(b), "\n") {
		t := strings.TrimSpace(line)
		if sec, ok := strings.CutPrefix(t, "--- @"); ok {
			in = sec == name
			found = found || in
			continue
		}
		if in && !strings.HasPrefix(t, "--") {
			out.WriteString(line)
		}
	}
	if !found {
		panic("redislimit: no section " + name + " in lua/" + file)
	}
	return out.String()
}

// fill returns the Lua fragment tmpl with each placeholder of pairs
// ("$name", value, …) replaced: the fragments below are each written once
// and placed where a script needs them, inline, so that the hot script
// defines no function (a closure per call) and dispatches on nothing.
func fill(tmpl string, pairs ...string) string {
	return strings.NewReplacer(pairs...).Replace(tmpl)
}

// luaNow reads Redis's clock into now (µs).
var luaNow = luaText("state.lua", "now")

// getPair returns Lua that reads the string $v (false: the key is absent;
// the variables keep their values) into the numeric variables a and b:
// "a b", or, with gap, "a" alone, which means b = a − gap (see setPair).
// What is not a number reads as nil.
func getPair(v, a, b, gap string) string {
	single := luaText("state.lua", "get-pair-else")
	if gap != "" {
		single = luaText("state.lua", "get-pair-else-gap")
	}
	return fill(fill(luaText("state.lua", "get-pair"), "$$else\n", single), "$v", v, "$a", a, "$b", b, "$gap", gap)
}

// luaSet writes the string $val to key $key with a TTL of $us µs (rounded
// up, and 1 ms more), or deletes the key when $us <= 0.
var luaSet = luaText("state.lua", "set")

// setPair returns Lua that writes the numbers a and b to key as luaSet
// does: "a b", or, with gap (a Lua expression that may be false), "a"
// alone when b = a − gap. A GCRA part's latest booking is TAT − interval
// whenever the booking found the bucket owing nothing, and then its
// value is one number, which Redis prints from the argument itself
// (exactly), sparing the script string.format and the reader a split.
func setPair(key, us, a, b, gap string) string {
	single := ""
	if gap != "" {
		single = luaText("state.lua", "set-pair-elseif")
	}
	return fill(fill(luaText("state.lua", "set-pair"), "$$elseif\n", single), "$key", key, "$us", us, "$a", a, "$b", b, "$gap", gap)
}

// luaExpireIn gives key $key a TTL of $us µs (as luaSet), or deletes it.
var luaExpireIn = luaText("state.lua", "expire-in")

// luaThrottle reads the throttle string $v (false: none) into u, l, g, s,
// pr, h, q, pid (0 when absent or unreadable), and sets bad when it had to
// repair them: no Settle writes a pause longer than maxPause, a pause end
// later than now + its length, a lease end later than now + maxPause (New
// accepts no longer ProbeLease), a count outside 0..2^50; a record that
// is not 8 numbers reads as none. The caller writes a repaired throttle
// back (luaKeepThrottle), so that it holds at most maxPause and expires.
var luaThrottle = fill(luaText("state.lua", "throttle"), "$P", strconv.FormatInt(maxPause, 10), "$N", strconv.FormatInt(maxMicros, 10))

// luaThrottleFields formats the throttle's 8 numbers (see luaThrottle).
const luaThrottleFields = `string.format('%d %d %d %d %d %d %d %d', u, l, g, s, pr, h, q, pid)`

// luaKeepThrottle writes the throttle back, kept while its pause, and
// the longer of its length and the stalest Retry-After (pace's
// DefaultMaxRetryAfter, µs) after it, or the probe's lease, can still
// matter; or deletes it.
var luaKeepThrottle = fill(luaSet, "$key", "KEYS[1]", "$val", luaThrottleFields,
	"$us", "math.max(u - now + math.max(l, "+strconv.FormatInt(staleMicros, 10)+"), q - now)")

// luaLearned reads the learned record $v (false: none) into the numbers
// qi, qu, ql, qn, qb (the quota pace, package pace's quotaPace: its
// interval, 0 for none; the end of its window; the latest instant booked
// under the pace; the remaining count it was learnt from; the hash of the
// server's bucket) and as, aw, ac (the adaptive rate, package pace's
// adaptiveRate: the instant of the latest cut, 0 when it never cut; the
// rate before the cut, in µ-requests a second; the ceiling's interval,
// µs) and md, mt (the departure margin a throttle widened, µs, 0 for
// none, and when it did; see luaMargin), 0 when absent, and sets lbad
// when it had to repair them: no answer teaches an interval or a window
// beyond maxPause, no decision books beyond now + the horizon ($H), no
// cut or widening happened after now, a rate stays within 0..maxRate
// and a margin within 0..the widest ($T). Each value beyond its bound is
// clamped to it (strict: the pace holds no longer than that), an
// unreadable one reads as 0; an adaptive rate without a valid ceiling is
// dropped. A record that is not 8 numbers reads as none; one of 8 has no
// margin (the margin came later). A later field goes at the end: a
// record with more fields reads its first 10.
var luaLearned = fill(luaText("state.lua", "learned"),
	"$P", strconv.FormatInt(maxPause, 10), "$N", strconv.FormatInt(maxMicros, 10), "$W", strconv.FormatInt(maxRate, 10))

// luaRate sets ar to the adaptive rate at now, in requests a second (0:
// not adapting), as package pace's adaptiveRate.rate does: C·(t−K)³ +
// wMax, t seconds after the cut, with K = ∛(wMax·(1−β)/C), never below
// the floor (or the ceiling, when that is slower); over once it reaches
// the ceiling.
var luaRate = fill(luaText("state.lua", "rate"), cubicPairs...)

// luaInterval sets pi to the learned pace's interval at now (µs; 0:
// none), from the learned record's variables (see luaLearned): the
// slower of the quota's interval, while its window lasts, and the
// adaptive rate's (luaRate).
var luaInterval = fill(luaText("state.lua", "interval"), "$$rate\n", luaRate)

// cubicPairs fill the adaptive rate's constants into Lua: $K (1−β)/C, $C
// and $F the floor.
var cubicPairs = []string{"$K", strconv.FormatFloat((1-cubicBeta)/cubicC, 'g', -1, 64),
	"$C", strconv.FormatFloat(cubicC, 'g', -1, 64), "$F", strconv.FormatFloat(adaptiveFloor, 'g', -1, 64)}

// luaLearnedEnd sets le to the instant after which the learned record
// (see luaLearned) no longer matters: the end of its quota pace's window,
// or when its adaptive rate is back at the ceiling (K + ∛((ceiling −
// wMax)/C) seconds after the cut), or when its margin is back at the
// starting one ($m0; a halving each $run µs), whichever is later; 0 for
// none. So no record is kept longer than maxPause, or a few minutes for
// the adaptive rate.
var luaLearnedEnd = fill(luaText("state.lua", "learned-end"), append([]string{"$P", strconv.FormatInt(maxPause, 10)}, cubicPairs...)...)

// luaMargin sets mg to the key's departure margin at now (µs), as package
// pace's margin.at: the margin md that a throttle widened at mt, halved
// once for each $run µs since (marginRun intervals of the Limit without
// a throttle, where Keyed counts marginRun answers), never below the
// starting margin $m0 (Options.Margin), which it is when none was
// widened.
var luaMargin = luaText("state.lua", "margin")

// luaLearnedFields formats the learned record's 10 numbers.
const luaLearnedFields = `string.format('%d %d %d %d %d %d %d %d %d %d', qi, qu, ql, qn, qb, as, aw, ac, md, mt)`

// keepLearned returns Lua that writes the learned record to key, kept
// until luaLearnedEnd's instant, or deletes it.
func keepLearned(key, m0, run string) string {
	return "do\n" + fill(luaLearnedEnd, "$m0", m0, "$run", run) + fill(luaSet, "$key", key, "$us", "le - now", "$val", luaLearnedFields) + "end\n"
}

// luaDecidePace declares t, the instant the decision books from, and
// reads the key's learned record (v[$lv], KEYS[$lk]; see luaLearned): t
// is the earliest instant its pace lets the request leave (package pace's
// keyThrottle.paceFrom), the latest booking under the pace plus the
// slower of the quota's interval (while its window lasts) and the
// adaptive rate's; now when neither applies. While one does, lr holds
// the record's numbers and luaLearnedEnd's instant, for the booking to
// update (luaDecidePaced). It declares mg, the key's departure margin
// (luaMargin), when wider than the starting one (nil: the starting one,
// which the parts' parameters hold already). The record's
// variables live in a block, so that the script's locals stay within
// Lua's 200 with maxParts parts.
var luaDecidePace = fill(luaText("decide.lua", "pace"),
	"$$learned\n", fill(luaLearned, "$v", "v[$lv]", "$H", "ARGV[2]", "$T", "(ARGV[5] + 0)"),
	"$$learned-end\n", fill(luaLearnedEnd, "$m0", "ARGV[3] + 0", "$run", "ARGV[4] + 0"),
	"$$margin\n", fill(luaMargin, "$m0", "ARGV[3] + 0", "$run", "ARGV[4] + 0"),
	"$$set-learned\n", fill(luaSet, "$key", "KEYS[$lk]", "$us", "le - now", "$val", luaLearnedFields),
	"$$interval\n", luaInterval)

// luaDecidePaced records the booking at t as the pace's latest (see
// luaDecidePace).
var luaDecidePaced = luaText("decide.lua", "paced")

// luaDecideHead is the start of every decision: the throttle first
// (paused, waiting for the probe, or electing this request as the probe).
// The values read by MGET are in v: the throttle's, then those of the
// string parts ($keys, $idx their indexes in KEYS). MGET reads a key of
// another type as absent, so when a part's key looks absent ($all false:
// the key's first decision, or its first after it idled; with no string
// part, when the throttle looks absent) EXISTS counts them ($present: how
// many MGET read), and a key that exists but was not read is someone
// else's (status 5). A decision on a busy key, whose parts' keys exist,
// checks nothing more: it writes no throttle it could not read (Settle's
// script, which reads it with GET, fails on one of another type and
// writes nothing), and any part key it writes was read.
var luaDecideHead = fill(luaText("decide.lua", "head"),
	"$$now\n", luaNow, "$$throttle\n", fill(luaThrottle, "$v", "v[1]"), "$$keep-throttle\n", luaKeepThrottle)

// luaRemember ends a decision that booked: it returns its reply r, and
// keeps it in the decision's own key (KEYS[$dk]) for ARGV[6] ms, so that
// the decision sent again (go-redis re-sends a command whose reply was
// lost) returns the same reply and books nothing more (luaDecideHead).
var luaRemember = luaText("decide.lua", "remember")

// fragments are the Lua of one algorithm in decideScript, written once
// and placed for each part of its kind, with $j the part's number (its
// variables x$j, y$j, c$j, a$j, b$j), $k its KEYS index, $v its index in v
// (a string part's), $x, $y, $c the ARGV indexes of its parameters x, y
// (at the starting margin) and its span c, $t of its widest margin, $n
// of a GCRA part's divisor, $z of a GCRA part's queue bound (present only
// when it has one) or of a fixed window's starting margin, $u the ARGV
// index of the decision's unique id (a sliding log's). mg is the key's
// departure margin when wider than the starting one (luaDecidePace).
type fragments struct {
	// read sets the part's parameters x$j, y$j, c$j and state a$j, b$j,
	// repairing the state (see the conventions above) and, in a decision
	// that elects the key's probe, resuming the part after the pause that
	// ended at u (package pace's algorithm.resume).
	read string
	// earliest raises t to the earliest instant at or after t the part
	// admits.
	earliest string
	// book books the part at t, writing its key with a TTL; a sliding
	// log's sets its member m$j.
	book string
}

var algorithms = map[int]fragments{
	// GCRA (token bucket, leaky bucket): a$j the theoretical arrival time
	// (TAT), b$j the latest booked instant; x the interval with the
	// margin (⌈(per + margin)/n⌉ at the starting margin, and ⌈Δ/n⌉ more
	// for a margin Δ wider), y the tolerance (capacity × x). Booking at t
	// moves TAT to max(TAT, t) + x.
	//
	// State: TAT at most now + c (booked at most the horizon ahead, and
	// capacity × interval after it), latest at most TAT. After a pause the
	// probe finds one unit and none saved beyond it: TAT at least u + y −
	// x, so the unit after the probe's comes x later, without the burst
	// the bucket saved up meanwhile (package pace's gcra.resume). The
	// first decision after a pause (resume: the first probe, or the first
	// decision after a pause without one) finds TAT at most u + y: every
	// booking still held was made before u (a booking at t leaves TAT at
	// most t + y), and those made for later were given back, which a
	// bucket does only in part when later ones overlap them (a pace books
	// slots far apart), so what they left is dropped.
	kindGCRA: {
		read: fill(luaText("gcra.lua", "read"),
			"$$get-pair\n", getPair("v[$v]", "a$j", "b$j", "x$j"),
			"$$set-pair\n", setPair("KEYS[$k]", "a$j - now", "a$j", "b$j", "x$j")),
		earliest: luaText("gcra.lua", "earliest"),
		book:     fill(luaText("gcra.lua", "book"), "$$set-pair\n", setPair("KEYS[$k]", "a - now", "a", "b", "x$j")),
	},
	// Fixed window: a$j the window's index (-1: none), b$j its count; x
	// the period, y the count, z the margin at the window's end where
	// nothing is booked (the key's, at most top). State: the window at most the one of now +
	// horizon (its end at most now + c), the count 0..y.
	kindFixed: {
		read: fill(luaText("fixed.lua", "read"),
			"$$get-pair\n", getPair("v[$v]", "a$j", "b$j", ""),
			"$$set-pair\n", setPair("KEYS[$k]", "(a$j + 1) * x$j - now", "a$j", "b$j", "")),
		earliest: luaText("fixed.lua", "earliest"),
		book:     fill(luaText("fixed.lua", "book"), "$$set-pair\n", setPair("KEYS[$k]", "(w + 1) * x$j - now", "w", "n", "")),
	},
	// Sliding log: entries older than the window x (per + the key's
	// margin, at most top) are dropped; a$j the
	// latest entry, b$j the entry the next booking waits for (-1: none, the
	// log holds fewer than y). Members are "instant-uid" (ARGV[$u] the
	// decision's unique id), so that bookings at one instant stay apart.
	// State: entries at most now + horizon (c − x); later ones move there
	// (y of them at most: more at one instant hold nothing longer).
	kindSliding: {
		read:     fill(luaText("sliding.lua", "read"), "$$expire-in\n", fill(luaExpireIn, "$key", "KEYS[$k]", "$us", "c$j")),
		earliest: luaText("sliding.lua", "earliest"),
		book: fill(luaText("sliding.lua", "book"),
			"$$expire-in\n", fill(luaExpireIn, "$key", "KEYS[$k]", "$us", "math.max(t, a$j) + x$j - now")),
	},
}

// firstPartArg is the ARGV index of the first part's parameters in
// decideScript.
const firstPartArg = 7

// maxParts is the most parts a Limit held in Redis may have: decideScript
// keeps each part's parameters and state in Lua locals, of which a
// function has at most 200.
const maxParts = 32

// partArgs is how many ARGV a part of p's kind takes (see decideScript).
func partArgs(p part) int {
	switch {
	case p.kind == kindSliding:
		return 4
	case p.kind == kindFixed, p.z < 0:
		return 5
	}
	return 6
}

// decideScript returns the script of one Wait decision for parts (at
// most maxParts), built from the fragments of their algorithms: the
// throttle first, then every part's earliest common instant, all booked or
// none. The text depends only on the parts' kinds (and whether a GCRA part
// has a queue bound), never on their numbers, so that Redis holds one
// script per shape of limit.
//
// KEYS: the throttle, then one per part, then the learned record, then
// the decision's own (see luaRemember). ARGV:
// the probe lease (µs), the horizon (µs, see horizon), the starting
// margin, how long a widened margin lasts before it halves, and the
// widest margin (µs; see luaMargin), how long a booking's reply is kept
// (ms, see remember), then each part's parameters (see
// part and partArgs): x, y and c at the starting margin, then a GCRA
// part's n, top and queue bound (when it has one), a fixed window's
// starting margin and top, a sliding log's top; these are the same in
// every decision of a Limiter (one slice, built once: see decideArgs). After them come the
// decision's unique id (only when a part is a sliding log), then,
// optional, the shortest wait the caller refuses (µs, -1 or absent: none;
// see waitBound) and expected probes (-1 or absent: none): a decision
// with no bound and no probe to expect sends only the Limiter's slice.
//
// Replies: {0, delay, gen, strikes, probe, lease, instant} booked, and a
// member per part after them when a part is a sliding log (empty for the
// others); {0, instant, gen} booked at once (delay, strikes and probe 0:
// the common decision, in fewer elements; never with a sliding log), or
// the reply kept of the same decision;
// {1, pause left, gen, probes} paused; {2, lease left, gen,
// probes} a probe is in flight; {3, delay, reason (1 beyond the caller's
// bound, 2 queue full, 4 no instant that every part admits was found, 5
// beyond the horizon), probes} refused; {4, 0, gen, probes} the probe was
// throttled since the caller's first look; {5, 0, index, 0} KEYS[index]
// holds another type.
func decideScript(parts []part) *redis.Script {
	return redis.NewScript(decideText(parts))
}

// decideText is the text of decideScript(parts).
func decideText(parts []part) string {
	f := decideFragments(parts)
	lk := strconv.Itoa(len(parts) + 2) // the learned record: the last of KEYS but the decision's, and of v but the decision's
	mget, idx := append(f.mget, "KEYS["+lk+"]"), append(f.idx, lk)
	lv := strconv.Itoa(len(mget))
	dk, dv := strconv.Itoa(len(parts)+3), strconv.Itoa(len(mget)+1) // the decision's memory: the last of KEYS, and of v
	all, present := make([]string, 0, len(mget)), make([]string, len(mget))
	for i := range mget {
		present[i] = "(v[" + strconv.Itoa(i+1) + "] and 1 or 0)"
		if i > 0 && i < len(mget)-1 {
			all = append(all, "v["+strconv.Itoa(i+1)+"]") // the parts' keys
		}
	}
	if len(all) == 0 { // no string part: the throttle or the learned record
		all = append(all, "v[1] or v["+lv+"]")
	}
	var b strings.Builder
	b.WriteString(fill(luaDecideHead, "$keys", strings.Join(mget, ", "), "$dk", dk, "$dv", dv, "$idx", strings.Join(idx, ", "),
		"$all", strings.Join(all, " and "), "$present", strings.Join(present, " + "), "$want", strconv.Itoa(f.bound+1)))
	b.WriteString(fill(luaDecidePace, "$lv", lv, "$lk", lk))
	b.WriteString(f.read.String())
	// The earliest instant every part admits, from the pace's: for one
	// part, its earliest (which admits); for more, passes until none
	// moves, at most 16.
	switch len(parts) {
	case 0:
	case 1:
		b.WriteString(f.earliest.String())
	default:
		b.WriteString(fill(luaText("decide.lua", "earliest-loop"), "$$earliest\n", f.earliest.String()))
	}
	b.WriteString(fill(luaText("decide.lua", "bound"), "$$queue\n", f.queue.String(), "$bound", strconv.Itoa(f.bound)))
	b.WriteString(f.book.String())
	b.WriteString(fill(luaDecidePaced, "$lk", lk))
	b.WriteString(fill(luaText("decide.lua", "lease"), "$$keep-throttle\n", luaKeepThrottle))
	if f.sliding {
		b.WriteString(fill(luaText("decide.lua", "reply-members"), "$members", strings.Join(f.members, ", ")))
	} else {
		b.WriteString(luaText("decide.lua", "reply"))
	}
	b.WriteString(fill(luaRemember, "$dk", dk))
	return b.String()
}

// partsLua is the Lua of a decision's parts (see decideFragments).
type partsLua struct {
	read, earliest, book, queue strings.Builder
	mget, idx                   []string // the keys MGET reads: the throttle's, then the string parts'; their indexes in KEYS
	members                     []string // the reply's member per part
	sliding                     bool     // a part is a sliding log
	bound                       int      // the ARGV index of the caller's bound
}

// decideFragments returns the fragments of parts, filled with their
// indexes in KEYS, v and ARGV.
func decideFragments(parts []part) *partsLua {
	f := &partsLua{mget: []string{"KEYS[1]"}, idx: []string{"1"}, members: make([]string, len(parts))}
	uid := firstPartArg // the first ARGV after the parts' parameters
	for _, p := range parts {
		uid += partArgs(p)
		f.sliding = f.sliding || p.kind == kindSliding
	}
	f.bound = uid // the caller's bound, then the expected probes
	if f.sliding {
		f.bound++
	}
	arg := firstPartArg // the part's parameters
	for i, p := range parts {
		j, k := strconv.Itoa(i+1), strconv.Itoa(i+2)
		pairs := []string{"$j", j, "$k", k, "$x", strconv.Itoa(arg), "$y", strconv.Itoa(arg + 1), "$c", strconv.Itoa(arg + 2), "$u", strconv.Itoa(uid)}
		switch p.kind { // the parameters after x, y and c (see partArgs)
		case kindGCRA:
			pairs = append(pairs, "$n", strconv.Itoa(arg+3), "$t", strconv.Itoa(arg+4), "$z", strconv.Itoa(arg+5))
		case kindFixed:
			pairs = append(pairs, "$z", strconv.Itoa(arg+3), "$t", strconv.Itoa(arg+4))
		default:
			pairs = append(pairs, "$t", strconv.Itoa(arg+3))
		}
		f.members[i] = "m" + j
		if p.kind != kindSliding {
			f.mget, f.idx = append(f.mget, "KEYS["+k+"]"), append(f.idx, k)
			pairs = append(pairs, "$v", strconv.Itoa(len(f.mget)))
			f.members[i] = "''"
		}
		alg := algorithms[p.kind]
		f.read.WriteString(fill(alg.read, pairs...))
		f.earliest.WriteString(fill(alg.earliest, pairs...))
		f.book.WriteString(fill(alg.book, pairs...))
		if p.kind == kindGCRA && p.z >= 0 { // a leaky bucket's queue bound
			f.queue.WriteString(fill(luaText("decide.lua", "queue"), "$z", strconv.Itoa(arg+5)))
		}
		arg += partArgs(p)
	}
	return f
}

// scriptHead is the preamble of the scripts that are not on the hot path
// (cancelScript, departScript): the clock, and the helpers they call.
var scriptHead = fill(luaText("helpers.lua", "head"), "$$now\n", luaNow,
	"$$get-pair\n", getPair("v", "a", "b", "gap"), "$$set-pair\n", setPair("key", "us", "a", "b", "gap"),
	"$$expire-in\n", fill(luaExpireIn, "$key", "key", "$us", "us"))

// cancelScript gives back a booking that decideScript made at instant t
// (ARGV[1]) whose request will not leave, and the probe role if it held it
// (ARGV[2] 1, ARGV[3] its lease), telling the key's waiters through channel
// ARGV[4] (message "a 0 " .. ARGV[5], the key's tag). A booking whose
// instant has passed counts as used. ARGV[6] is the number of parts, then
// 4 per part: kind, x and c (as in decideScript), member. A part whose key holds no number
// is left to the next decision to repair; every TTL is at most c.
//
// A token bucket or pacer gives back only the part of its interval that no
// later booking overlaps (golang.org/x/time/rate's Reservation.CancelAt):
// exact when nothing was booked after it, never looser.
var cancelScript = redis.NewScript(cancelText)

// cancelText is cancelScript's text.
var cancelText = fill(luaText("cancel.lua", "cancel"),
	"$$head\n", scriptHead, "$$throttle\n", fill(luaThrottle, "$v", "th"), "$$keep-throttle\n", luaKeepThrottle)

// settleScript records how a request ended, as package pace's Keyed
// does (a 429's pause, strikes, the probe's answer, and what the answer
// taught: the departure margin, the adaptive rate's cut, the server's
// quota). KEYS: the
// throttle and the learned record. ARGV: gen and lease of the Permit,
// probe (1/0), pause (0: none), response (1/0), channel, the key's tag
// (keyTag), cut (1/0; with a pause), the ceiling's interval (µs, the
// limit's; see limitInterval), the quota's remaining count and reset (µs;
// 0: no quota) and bucket hash, the horizon (µs), then the Permit's
// Track (1/0) and Strikes, whether the answer stated a quota (1/0), and
// the starting margin, its run and the widest (µs; see luaMargin). It
// writes nothing for
// a key that has no throttle and met none, and learnt nothing. It
// publishes "p <gen> <tag>" when it set or extended the pause, "a
// <probes> <tag>" when it ended the probe's role. It replies {the
// learned pace's interval at now (µs, 0: none; see luaInterval), the
// pause's rest (µs, 0: none), its generation}, or {-1, 0, 0} when it
// read no learned record: what a leased share applies at once.
//
// A quota is learnt as package pace's keyThrottle.learn does: remaining
// requests are spaced reset/(remaining+1) apart until the reset; none
// remaining pauses the key until the reset, without a probe. Resets
// within a second of the known one name the same window: the earliest is
// kept, as whole seconds rounded up name it late. An answer
// that contradicts the pace of the same bucket in a window that has not
// ended is old news and ignored: its reset a second or more earlier, or
// more remaining within the same window. An answer of another bucket
// replaces the pace only when slower. A cut (a new strike: the Permit's
// generation is the throttle's) drops the adaptive rate to β times its
// rate at now, or the ceiling's if it was not adapting. But a new strike
// of a request that left at its limit's slot (Track, no Strikes, no
// quota stated) is the server's clock disagreeing with ours: it doubles
// the key's margin (from minWiden at least, to the widest at most) and
// cuts nothing, unless the margin is at its widest already. A pause moves the
// pace's latest booking back to now at the latest, as the bookings after
// it are given back.
var settleScript = redis.NewScript(settleText)

// settleText is settleScript's text.
var settleText = fill(luaText("settle.lua", "settle"),
	"$$now\n", luaNow,
	"$$throttle\n", fill(luaThrottle, "$v", "th"),
	"$$learned\n", fill(luaLearned, "$v", "lv", "$H", "hz", "$T", "top"),
	"$$margin\n", fill(luaMargin, "$m0", "tonumber(ARGV[17])", "$run", "tonumber(ARGV[18])"),
	"$minWiden", strconv.FormatInt(minWiden, 10),
	"$$rate\n", luaRate,
	"$$interval\n", luaInterval,
	"$tolerance", strconv.FormatInt(quotaTolerance, 10),
	"$$keep-throttle\n", luaKeepThrottle,
	"$$keep-learned\n", keepLearned("KEYS[2]", "tonumber(ARGV[17])", "tonumber(ARGV[18])"))

// departScript moves the booking a decision made at instant t (ARGV[1])
// to t + L (ARGV[2], > 0), where its request actually left, as package
// pace's Keyed does when it learns of a late departure: a token bucket's or
// pacer's later units move back by L, a window counts the unit where it
// left. ARGV[3] is the number of parts, then 4 per part: kind, x and c
// (as in decideScript), member (a sliding log's; the part's new member is
// it with the instant replaced). Bookings made after this one by then keep
// their instants. Nothing moves beyond now + c, no TTL exceeds c.
var departScript = redis.NewScript(departText)

// departText is departScript's text.
var departText = fill(luaText("depart.lua", "depart"), "$$head\n", scriptHead)
