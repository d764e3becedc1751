package batch

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/retryrule"
)

// The kill-and-resume tests run their batch in a child process: the test
// binary itself, run with -test.run=^TestKillResumeHelper$ and these
// variables set (the pattern of os/exec's TestHelperProcess).
const (
	killHelperEnv  = "PACE_BATCH_KILL_HELPER" // "1" in the child
	killURLEnv     = "PACE_BATCH_KILL_URL"
	killJournalEnv = "PACE_BATCH_KILL_JOURNAL"
	killModeEnv    = "PACE_BATCH_KILL_MODE" // "lookup": each item looks something up before its request
	killItems      = 500
	killConc       = 8 // the child's Concurrency
)

// killItemKind is what item i sends: a GET, a POST with the key HTTP
// derives, or a POST without a key; in lookup mode also a POST with a key
// of the item's own.
func killItemKind(i int, lookup bool) string {
	if lookup {
		return [...]string{"get", "ownkey", "keyed", "unkeyed"}[i%4]
	}
	return [...]string{"get", "keyed", "unkeyed"}[i%3]
}

// killBatchItems is the number of items of a mode's batch.
func killBatchItems(lookup bool) int {
	if lookup {
		return lookupItems
	}
	return killItems
}

// TestKillResumeHelper is the child process of TestKillResume and
// TestKillResumeBeforeSend: it runs the batch against the parent's server
// with the parent's journal, and prints each item's outcome as JSON when
// the run ends (if it is not killed first). Without killHelperEnv it
// returns at once: it is no test of its own.
func TestKillResumeHelper(t *testing.T) {
	if os.Getenv(killHelperEnv) != "1" {
		return
	}
	url := os.Getenv(killURLEnv)
	lookup := os.Getenv(killModeEnv) == "lookup"
	client := &http.Client{Transport: &pace.Transport{}}
	plain := &http.Client{} // the item's own work, outside the batch's journal
	build := func(ctx context.Context, i int) (*http.Request, error) {
		kind := killItemKind(i, lookup)
		if lookup { // the item's own work before its request
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/lookup/%d", url, i), nil)
			if err != nil {
				return nil, err
			}
			resp, err := plain.Do(req)
			if err != nil {
				return nil, err
			}
			retryrule.Drain(resp.Body)
		}
		method := http.MethodPost
		if kind == "get" {
			method = http.MethodGet
		}
		req, err := http.NewRequestWithContext(ctx, method, fmt.Sprintf("%s/%s/%d", url, kind, i), nil)
		switch {
		case err != nil:
		case kind == "unkeyed":
			req.Header.Set("Idempotency-Key", "") // no key: the opt-out
		case kind == "ownkey":
			req.Header.Set("Idempotency-Key", fmt.Sprintf("own-%d", i))
		}
		return req, err
	}
	rep, _ := Run(context.Background(), ints(killBatchItems(lookup)), HTTP(client, build, nil),
		Options{Journal: os.Getenv(killJournalEnv), Concurrency: killConc})
	client.CloseIdleConnections() // for goleak
	plain.CloseIdleConnections()
	out := make(map[string]string, len(rep.Results))
	for _, r := range rep.Results {
		out[r.ID] = r.Outcome.String()
	}
	require.NoError(t, json.NewEncoder(os.Stdout).Encode(map[string]any{"outcomes": out, "summary": rep.Summary.String()}))
}

// payments is the test's upstream: it applies POSTs, deduplicating those
// with an Idempotency-Key as a payment API does (the first request of a
// key is applied, later ones get the same answer and apply nothing), and
// counts, per item, what it applied. It can kill the child process right
// after applying the request that reaches a threshold, before answering:
// the child dies with the server having applied what it never heard back.
//
// It also serves the lookups of lookup mode (/lookup/<i>), and can kill
// the child while every one of its items is inside its lookup: after
// holdAt lookups it answers no more (it holds them), and once it holds
// killConc of them (every slot of the child) and every request of a
// looked-up item has arrived, it kills the child at a random instant of
// the next few milliseconds, the lookups still held.
type payments struct {
	mu      sync.Mutex
	applied map[string]int    // item (kind/i) → times applied
	keys    map[string]string // Idempotency-Key → the item it applied
	reads   map[string]int    // GETs served, per item
	reached map[string]bool   // items whose request arrived, whatever was applied
	count   int               // requests handled
	killAt  int               // kill the child when count reaches it; 0: never
	child   *os.Process       // to kill
	killed  chan struct{}     // closed by the kill
	rng     *rand.Rand        // handler delays

	holdAt   int            // lookups to answer before holding the rest; < 0: answer all
	answered int            // lookups answered for this child
	held     int            // lookups held
	release  chan struct{}  // closed at the kill: held lookups return
	transit  map[string]int // looked-up items whose request has not arrived
}

func (p *payments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	item := strings.TrimPrefix(r.URL.Path, "/")
	if id, ok := strings.CutPrefix(item, "lookup/"); ok {
		p.lookup(w, r, id)
		return
	}
	p.mu.Lock()
	d := time.Duration(p.rng.IntN(3)) * time.Millisecond
	p.mu.Unlock()
	time.Sleep(d) // requests overlap, so some are in flight at the kill
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reached[item] = true
	if r.Method == http.MethodGet {
		p.reads[item]++
	} else if key := r.Header.Get("Idempotency-Key"); key == "" {
		p.applied[item]++
	} else if prev, ok := p.keys[key]; !ok {
		p.keys[key] = item
		p.applied[item]++
	} else if prev != item {
		http.Error(w, "key reused for another item", http.StatusUnprocessableEntity)
		return
	}
	p.count++
	if p.killAt > 0 && p.count >= p.killAt && p.child != nil { // >=: a dead child's last requests may arrive before the next child starts
		p.killLocked()
		p.killAt = 0
	}
	if _, i, ok := strings.Cut(item, "/"); ok && p.transit[i] > 0 {
		if p.transit[i]--; p.transit[i] == 0 {
			delete(p.transit, i)
		}
		p.maybeKillLocked()
	}
	w.WriteHeader(http.StatusOK)
}

// lookup answers item id's lookup after a few milliseconds, or holds it
// until the kill.
func (p *payments) lookup(w http.ResponseWriter, r *http.Request, id string) {
	p.mu.Lock()
	if p.holdAt >= 0 && p.answered >= p.holdAt {
		p.held++
		p.maybeKillLocked()
		release := p.release
		p.mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		panic(http.ErrAbortHandler) // no answer: the connection is cut
	}
	p.answered++
	p.transit[id]++
	d := time.Duration(5+p.rng.IntN(20)) * time.Millisecond
	p.mu.Unlock()
	time.Sleep(d)
	w.WriteHeader(http.StatusOK)
}

// maybeKillLocked kills the child, a few milliseconds from now, once every
// one of its slots is held in a lookup and no looked-up item's request is
// still to come: nothing of the child is then between its work and its
// request.
func (p *payments) maybeKillLocked() {
	if p.holdAt < 0 || p.held < killConc || len(p.transit) > 0 || p.child == nil {
		return
	}
	p.holdAt = -1 // once
	child, killed, release := p.child, p.killed, p.release
	time.AfterFunc(time.Duration(p.rng.IntN(5000))*time.Microsecond, func() {
		close(killed) // before the kill: Wait may return at once
		_ = child.Signal(syscall.SIGKILL)
		close(release)
	})
}

func (p *payments) killLocked() {
	close(p.killed)
	_ = p.child.Signal(syscall.SIGKILL)
}

func newPayments(seed uint64) *payments {
	return &payments{applied: map[string]int{}, keys: map[string]string{}, reads: map[string]int{},
		reached: map[string]bool{}, transit: map[string]int{}, holdAt: -1, release: make(chan struct{}),
		rng: rand.New(rand.NewPCG(seed, 12))}
}

// killSeries runs the child kills+1 times on one journal against p, each of
// the first kills runs killed as arm (called with p.mu held before the
// child starts) sets up, and returns the last run's report: each item's
// outcome by ID, and the summary.
func killSeries(t *testing.T, p *payments, kills int, lookup bool, arm func(run int)) map[string]any {
	t.Helper()
	srv := httptest.NewServer(p)
	defer srv.Close()
	journal := filepath.Join(t.TempDir(), "run.jsonl")
	mode := ""
	if lookup {
		mode = "lookup"
	}
	var final map[string]any
	for run := range kills + 1 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillResumeHelper$", "-test.count=1", "-test.timeout=60s")
		cmd.Env = append(os.Environ(), killHelperEnv+"=1", killURLEnv+"="+srv.URL, killJournalEnv+"="+journal, killModeEnv+"="+mode)
		var stdout strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
		p.mu.Lock()
		p.killed, p.release = make(chan struct{}), make(chan struct{})
		p.answered, p.held = 0, 0
		clear(p.transit)
		if run < kills {
			arm(run)
		}
		p.mu.Unlock()
		require.NoError(t, cmd.Start())
		p.mu.Lock()
		p.child = cmd.Process
		p.maybeKillLocked() // in case the child's lookups came first
		p.mu.Unlock()
		err := cmd.Wait()
		p.mu.Lock()
		p.child, p.killAt, p.holdAt = nil, 0, -1
		p.mu.Unlock()
		if run < kills {
			select {
			case <-p.killed:
			default:
				t.Fatalf("run %d ended before its kill: %v\n%s", run, err, stdout.String())
			}
			continue
		}
		require.NoError(t, err, "the last run")
		out := stdout.String()
		require.NoError(t, json.NewDecoder(strings.NewReader(out[max(strings.Index(out, "{"), 0):])).Decode(&final), out)
	}
	return final
}

// killTally is what the server saw of a final report.
type killTally struct {
	twice, lost, inDoubt, inDoubtApplied, inDoubtUnreached int
}

// tallyKills compares the final report's outcomes with what p applied:
// no item applied twice, none lost (every item reported succeeded was
// applied or served, and every POST the server applied is reported
// succeeded or in doubt), and in doubt only a POST without a key.
func tallyKills(t *testing.T, p *payments, final map[string]any, lookup bool) killTally {
	t.Helper()
	n := killBatchItems(lookup)
	outcomes := final["outcomes"].(map[string]any)
	require.Len(t, outcomes, n, "every item in the final report")
	var k killTally
	for i := range n {
		kind := killItemKind(i, lookup)
		item := fmt.Sprintf("%s/%d", kind, i)
		o := outcomes[fmt.Sprint(i)]
		applied := p.applied[item]
		if kind == "get" {
			applied = min(p.reads[item], 1) // reads may repeat; at least one is needed
		}
		if applied > 1 {
			k.twice++
			t.Errorf("item %s applied %d times", item, applied)
		}
		switch o {
		case "succeeded":
			if applied != 1 {
				k.lost++
				t.Errorf("item %s reported succeeded, applied %d times", item, applied)
			}
		case "in doubt":
			k.inDoubt++
			k.inDoubtApplied += applied
			if !p.reached[item] {
				k.inDoubtUnreached++
				t.Logf("item %s in doubt, and its request never reached the server", item)
			}
			assert.Equal(t, "unkeyed", kind, "only a POST without a key stays in doubt (item %s)", item)
		default:
			k.lost++
			t.Errorf("item %s ended %v", item, o)
		}
	}
	return k
}

// TestKillResume: a child process runs a batch of 500 items (GETs, POSTs
// with the key HTTP derives, POSTs without a key) against a server that
// records what it applied; it is killed with SIGKILL at four random points
// (each right after the server applied a random request, with up to seven
// others in flight) and resumed each time with the same journal. Across the
// five runs no item is applied twice, none is lost (every item the final
// report calls succeeded was applied or served, and every POST the server
// applied is reported succeeded or in doubt), and the final report
// accounts for each item once: succeeded, or in doubt (a POST without a
// key that was in flight at a kill; the server may or may not have
// applied it).
func TestKillResume(t *testing.T) {
	if os.Getenv(killHelperEnv) == "1" {
		t.Skip("in the child process") // the child runs TestKillResumeHelper only
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	p := newPayments(seed)
	start := time.Now()
	final := killSeries(t, p, 4, false, func(int) {
		p.killAt = p.count + 1 + rng.IntN(killItems/5) // a random request of the next hundred
	})
	k := tallyKills(t, p, final, false)
	t.Logf("5 runs, 4 SIGKILLs, %v: %d applied twice, %d lost, %d in doubt (%d of them applied by the server); final: %v",
		time.Since(start).Round(time.Millisecond), k.twice, k.lost, k.inDoubt, k.inDoubtApplied, final["summary"])
	assert.Zero(t, k.twice)
	assert.Zero(t, k.lost)
}

// lookupItems is the size of TestKillResumeBeforeSend's batch.
const lookupItems = 600

// TestKillResumeBeforeSend: each item of a 600-item batch (GETs, POSTs
// with a key of their own, POSTs with the key HTTP derives, POSTs without a
// key) looks something up before its request, and the child is killed 20
// times while every item in flight is inside its lookup, a third of the
// times in the first items a run starts (before any request of that run
// left), then resumed to the end on the same journal. An item whose
// request never left is done again, whatever its method: none ends in
// doubt without having reached the server, none is applied twice, none is
// lost.
func TestKillResumeBeforeSend(t *testing.T) {
	if os.Getenv(killHelperEnv) == "1" {
		t.Skip("in the child process")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	p := newPayments(seed)
	start := time.Now()
	final := killSeries(t, p, 20, true, func(int) {
		p.holdAt = rng.IntN(3 * killConc) // < killConc: inside the run's first lookups
	})
	k := tallyKills(t, p, final, true)
	t.Logf("21 runs, 20 SIGKILLs, %v: %d applied twice, %d lost, %d in doubt (%d never reached the server); final: %v",
		time.Since(start).Round(time.Millisecond), k.twice, k.lost, k.inDoubt, k.inDoubtUnreached, final["summary"])
	assert.Zero(t, k.twice)
	assert.Zero(t, k.lost)
	assert.Zero(t, k.inDoubtUnreached)
}
