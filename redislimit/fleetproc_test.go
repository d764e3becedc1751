package redislimit

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fleet tests run real processes: this test binary again, running only
// TestFleetWorker, with its fleetJob in fleetEnv. Each process has its own
// Limiter, Redis client and pace.Transport; they share one redis-server.
// The test's own servers count what arrives, on the test's clock.
const fleetEnv = "PACE_FLEET"

// fleetJob is what one worker process does.
type fleetJob struct {
	Kind   string // "lease" (leaseWorker) or a key of fleetCallers
	Redis  string // the redis-server's address
	API    string // the URL the worker calls
	Queue  string // the jobQueue's URL (fleetCallers' kinds)
	ID     string // the process's name
	Prefix string // the Limiter's Options.Prefix (fleetCallers' kinds)
}

// TestFleetWorker is one process of a fleet test. Without fleetEnv it
// returns at once: it is no test of its own.
func TestFleetWorker(t *testing.T) {
	env := os.Getenv(fleetEnv)
	if env == "" {
		return
	}
	var j fleetJob
	require.NoError(t, json.Unmarshal([]byte(env), &j))
	if j.Kind == "lease" {
		leaseWorker(t, j)
		return
	}
	c, ok := fleetCallers[j.Kind]
	require.True(t, ok, "no worker of kind %q", j.Kind)
	callWorker(t, j, c)
}

// procs are the worker processes of one test. Those still running when
// the test ends are killed; what a process wrote is logged if it failed
// or was killed.
type procs struct {
	t    *testing.T
	cmds map[string]*exec.Cmd
	outs map[string]*bytes.Buffer
}

func newProcs(t *testing.T) *procs {
	p := &procs{t: t, cmds: map[string]*exec.Cmd{}, outs: map[string]*bytes.Buffer{}}
	t.Cleanup(func() {
		for id, c := range p.cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
			p.logOutput(id)
		}
	})
	return p
}

// start starts the process of j, named j.ID.
func (p *procs) start(j fleetJob) {
	env, err := json.Marshal(j)
	require.NoError(p.t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetWorker$", "-test.count=1", "-test.timeout=150s")
	cmd.Env = append(os.Environ(), fleetEnv+"="+string(env))
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(p.t, cmd.Start())
	p.cmds[j.ID], p.outs[j.ID] = cmd, out
}

// kill kills process id (SIGKILL).
func (p *procs) kill(id string) {
	cmd := p.cmds[id]
	require.NoError(p.t, cmd.Process.Kill())
	_ = cmd.Wait()
	delete(p.cmds, id)
}

// wait waits for every process to exit, and asserts that each succeeded.
func (p *procs) wait() {
	for id, cmd := range p.cmds {
		err := cmd.Wait()
		delete(p.cmds, id)
		if !assert.NoError(p.t, err, "process %s", id) {
			p.logOutput(id)
		}
	}
}

func (p *procs) logOutput(id string) {
	if s := strings.TrimSpace(p.outs[id].String()); s != "" {
		p.t.Logf("process %s wrote:\n%s", id, s)
	}
}

// jobQueue hands out the calls of a fleet test to its worker processes.
// /ready holds each process until all n are (30 s at most), then tells
// each the same start (Unix ns, the instant the last was ready). /next answers the next
// call's number, or 410 once calls are handed out (calls 0: never).
// /failed counts a call that did not succeed.
type jobQueue struct {
	n, calls int

	mu     sync.Mutex
	ready  int
	start  time.Time
	begun  chan struct{}
	next   int
	failed int
}

func (q *jobQueue) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q.mu.Lock()
	switch r.URL.Path {
	case "/ready":
		if q.ready++; q.ready == q.n {
			q.start = time.Now()
			close(q.begun)
		}
		q.mu.Unlock()
		select {
		case <-q.begun:
		case <-time.After(30 * time.Second): // a process failed to start
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			return
		}
		q.mu.Lock()
		_, _ = w.Write([]byte(strconv.FormatInt(q.start.UnixNano(), 10)))
	case "/next":
		if q.calls > 0 && q.next >= q.calls {
			w.WriteHeader(http.StatusGone)
			break
		}
		_, _ = w.Write([]byte(strconv.Itoa(q.next)))
		q.next++
	case "/failed":
		q.failed++
	}
	q.mu.Unlock()
}

// runFleet runs n processes of kind calling api, sharing prefix in the
// redis-server at addr, until calls are done (or their run is over), and
// returns their queue.
func runFleet(t *testing.T, kind, addr, api, prefix string, n, calls int) *jobQueue {
	q := &jobQueue{n: n, calls: calls, begun: make(chan struct{})}
	hs := httptest.NewServer(q)
	defer hs.Close()
	ps := newProcs(t)
	for i := range n {
		ps.start(fleetJob{Kind: kind, Redis: addr, API: api, Queue: hs.URL, ID: "p" + strconv.Itoa(i), Prefix: prefix})
	}
	ps.wait()
	q.mu.Lock()
	defer q.mu.Unlock()
	require.Equal(t, n, q.ready, "every process got ready")
	return q
}

// fleetCaller is how the processes of one kind call: through a
// pace.Transport with a Limiter of limit and retry, from goroutines each.
// With keys > 0, call i carries X-API-Key "key(i % keys)", the
// Transport's key; otherwise the host is. With run > 0 they call until
// run after the start and stop there, cutting calls short; otherwise
// until the queue is empty.
type fleetCaller struct {
	limit      pace.Limit
	retry      retry.Policy
	goroutines int
	keys       int
	run        time.Duration
}

var fleetCallers = map[string]fleetCaller{
	"quota":    {goroutines: 2},
	"adaptive": {limit: pace.TokenBucket(pace.PerSecond(2*adaptRate), 5), retry: retry.Policy{MaxAttempts: 10}, goroutines: 4, run: adaptRun},
	"sliding":  {limit: pace.SlidingLog(pace.PerSecond(slidingRate)), retry: retry.Policy{MaxAttempts: 10}, goroutines: slidingKeys, keys: slidingKeys},
}

// callWorker is a worker process of a fleetCallers kind.
func callWorker(t *testing.T, j fleetJob, c fleetCaller) {
	lim := newLimiter(t, newClient(t, j.Redis), c.limit, Options{Prefix: j.Prefix})
	base, plainBase := &http.Transport{}, &http.Transport{}
	defer base.CloseIdleConnections()
	defer plainBase.CloseIdleConnections()
	tr := &pace.Transport{Base: base, Limiter: lim, Retry: c.retry}
	if c.keys > 0 {
		tr.Key = func(r *http.Request) string { return r.Header.Get("X-API-Key") }
	}
	client, plain := &http.Client{Transport: tr}, &http.Client{Transport: plainBase}
	ask := func(path string) (string, int, error) {
		resp, err := plain.Get(j.Queue + path)
		if err != nil {
			return "", 0, err
		}
		return readAll(resp), resp.StatusCode, nil
	}
	s, _, err := ask("/ready")
	require.NoError(t, err)
	ns, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	end := time.Now().Add(2 * time.Minute)
	if c.run > 0 {
		end = time.Unix(0, ns).Add(c.run)
	}
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	var wg sync.WaitGroup
	for range c.goroutines {
		wg.Go(func() {
			for ctx.Err() == nil {
				s, code, err := ask("/next")
				if !assert.NoError(t, err) || code != http.StatusOK {
					return
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.API+"/items/"+s, nil)
				if !assert.NoError(t, err) {
					return
				}
				if c.keys > 0 {
					i, _ := strconv.Atoi(s)
					req.Header.Set("X-API-Key", "key"+strconv.Itoa(i%c.keys))
				}
				resp, err := client.Do(req)
				ok := err == nil && resp.StatusCode < 300
				if err == nil {
					resp.Body.Close()
				}
				if !ok && c.run == 0 {
					_, _, err := ask("/failed")
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()
}
