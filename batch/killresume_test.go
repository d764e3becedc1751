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
)

// The kill-and-resume test runs its batch in a child process: the test
// binary itself, run with -test.run=^TestKillResumeHelper$ and these
// variables set (the pattern of os/exec's TestHelperProcess).
const (
	killHelperEnv  = "PACE_BATCH_KILL_HELPER" // "1" in the child
	killURLEnv     = "PACE_BATCH_KILL_URL"
	killJournalEnv = "PACE_BATCH_KILL_JOURNAL"
	killItems      = 500
)

// killItemKind is what item i sends: a GET, a POST with the key HTTP
// derives, or a POST without a key.
func killItemKind(i int) string { return [...]string{"get", "keyed", "unkeyed"}[i%3] }

// TestKillResumeHelper is the child process of TestKillResume: it runs the
// batch against the parent's server with the parent's journal, and prints
// each item's outcome as JSON when the run ends (if it is not killed
// first). Without killHelperEnv it returns at once: it is no test of its own.
func TestKillResumeHelper(t *testing.T) {
	if os.Getenv(killHelperEnv) != "1" {
		return
	}
	url := os.Getenv(killURLEnv)
	client := &http.Client{Transport: &pace.Transport{}}
	build := func(ctx context.Context, i int) (*http.Request, error) {
		kind := killItemKind(i)
		method := http.MethodPost
		if kind == "get" {
			method = http.MethodGet
		}
		req, err := http.NewRequestWithContext(ctx, method, fmt.Sprintf("%s/%s/%d", url, kind, i), nil)
		if kind == "unkeyed" && err == nil {
			req.Header.Set("Idempotency-Key", "") // no key: the opt-out
		}
		return req, err
	}
	rep, _ := Run(context.Background(), ints(killItems), HTTP(client, build, nil),
		Options{Journal: os.Getenv(killJournalEnv), Concurrency: 8})
	client.CloseIdleConnections() // for goleak
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
type payments struct {
	mu      sync.Mutex
	applied map[string]int    // item (kind/i) → times applied
	keys    map[string]string // Idempotency-Key → the item it applied
	reads   map[string]int    // GETs served, per item
	count   int               // requests handled
	killAt  int               // kill the child when count reaches it; 0: never
	child   *os.Process       // to kill
	killed  chan struct{}     // closed by the kill
	rng     *rand.Rand        // handler delays
}

func (p *payments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	item := strings.TrimPrefix(r.URL.Path, "/")
	p.mu.Lock()
	d := time.Duration(p.rng.IntN(3)) * time.Millisecond
	p.mu.Unlock()
	time.Sleep(d) // requests overlap, so some are in flight at the kill
	p.mu.Lock()
	defer p.mu.Unlock()
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
		_ = p.child.Signal(syscall.SIGKILL)
		close(p.killed)
		p.killAt = 0
	}
	w.WriteHeader(http.StatusOK)
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
	p := &payments{applied: map[string]int{}, keys: map[string]string{}, reads: map[string]int{},
		rng: rand.New(rand.NewPCG(seed, 12))}
	srv := httptest.NewServer(p)
	defer srv.Close()
	journal := filepath.Join(t.TempDir(), "run.jsonl")

	start := time.Now()
	var final map[string]any
	for run := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillResumeHelper$", "-test.count=1", "-test.timeout=60s")
		cmd.Env = append(os.Environ(), killHelperEnv+"=1", killURLEnv+"="+srv.URL, killJournalEnv+"="+journal)
		var stdout strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
		p.mu.Lock()
		if run < 4 {
			p.killAt = p.count + 1 + rng.IntN(killItems/5) // a random request of the next hundred
		}
		p.killed = make(chan struct{})
		p.mu.Unlock()
		require.NoError(t, cmd.Start())
		p.mu.Lock()
		p.child = cmd.Process
		p.mu.Unlock()
		err := cmd.Wait()
		p.mu.Lock()
		p.child, p.killAt = nil, 0
		p.mu.Unlock()
		if run < 4 {
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
	elapsed := time.Since(start)

	outcomes := final["outcomes"].(map[string]any)
	require.Len(t, outcomes, killItems, "every item in the final report")
	var twice, lost, inDoubt, inDoubtApplied int
	for i := range killItems {
		kind := killItemKind(i)
		item := fmt.Sprintf("%s/%d", kind, i)
		o := outcomes[fmt.Sprint(i)]
		applied := p.applied[item]
		if kind == "get" {
			applied = min(p.reads[item], 1) // reads may repeat; at least one is needed
		}
		if applied > 1 {
			twice++
			t.Errorf("item %s applied %d times", item, applied)
		}
		switch o {
		case "succeeded":
			if applied != 1 {
				lost++
				t.Errorf("item %s reported succeeded, applied %d times", item, applied)
			}
		case "in doubt":
			inDoubt++
			inDoubtApplied += applied
			assert.Equal(t, "unkeyed", kind, "only a POST without a key stays in doubt (item %s)", item)
		default:
			lost++
			t.Errorf("item %s ended %v", item, o)
		}
	}
	t.Logf("5 runs, 4 SIGKILLs, %v: %d applied twice, %d lost, %d in doubt (%d of them applied by the server); final: %v",
		elapsed.Round(time.Millisecond), twice, lost, inDoubt, inDoubtApplied, final["summary"])
	assert.Zero(t, twice)
	assert.Zero(t, lost)
}
