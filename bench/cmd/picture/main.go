// Command picture runs pace and go-retryablehttp against a real nginx
// limit_req at exactly its limit, each against a fresh nginx, and draws
// what nginx's access log recorded: arrivals per second against the limit,
// with every 429 marked. It writes an SVG (the README's picture) and
// prints the counts.
//
//	cd bench && go run ./cmd/picture [-rate 10] [-n 100] [-workers 4] [-o ../docs/img/pace-vs-retryablehttp.svg]
//
// Both clients are set to the server's rate, as a user who knows the limit
// sets them: pace with LeakyBucket(PerSecond(rate)) and its default retry
// policy; go-retryablehttp (no pacer of its own) with NewClient's defaults
// over an x/time/rate Limiter(rate, burst 1) waited on before every
// attempt, as in cmd/scenarios. nginx needs to be installed (apt-get
// install nginx-light); it listens on a free port of 127.0.0.1.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/pacehttp/pace"
	"github.com/pacehttp/pace/bench/internal/peer"
)

// arrival is one line of nginx's access log.
type arrival struct {
	at     time.Duration // since the run's first arrival, nginx's $msec
	status int
}

// run is what one client did against its nginx.
type run struct {
	name     string
	arrivals []arrival
	elapsed  time.Duration // client's clock: first request sent to last answer read
	failed   int           // requests the client gave up on
}

func main() {
	perSecond := flag.Int("rate", 10, "nginx's limit_req rate, requests a second (the clients' rate too)")
	n := flag.Int("n", 100, "requests each client sends")
	workers := flag.Int("workers", 4, "goroutines sending at once")
	out := flag.String("o", "../docs/img/pace-vs-retryablehttp.svg", "SVG file to write")
	flag.Parse()
	if *perSecond < 1 || *n < 1 || *workers < 1 {
		fmt.Fprintln(os.Stderr, "picture: -rate, -n and -workers must be at least 1")
		os.Exit(2)
	}
	version, err := nginxVersion()
	if err != nil {
		fmt.Fprintln(os.Stderr, "picture:", err)
		os.Exit(1)
	}

	clients := []struct {
		name  string
		build func(base http.RoundTripper, host string) *http.Client
	}{
		{"pace", func(base http.RoundTripper, host string) *http.Client {
			return &http.Client{Transport: &pace.Transport{
				Base:   base,
				Limits: pace.Hosts{host: {Limit: pace.LeakyBucket(pace.PerSecond(*perSecond), pace.LeakyOptions{Queue: *n})}},
			}}
		}},
		{"go-retryablehttp", func(base http.RoundTripper, _ string) *http.Client {
			c := retryablehttp.NewClient() // DefaultRetryPolicy, DefaultBackoff, RetryMax 4
			c.Logger = nil
			c.HTTPClient = &http.Client{Transport: &peer.RatePaced{Next: base, Limiter: rate.NewLimiter(rate.Limit(*perSecond), 1)}}
			return c.StandardClient()
		}},
	}
	var runs []run
	for _, c := range clients {
		r, err := runOne(c.name, c.build, *perSecond, *n, *workers)
		if err != nil {
			fmt.Fprintf(os.Stderr, "picture: %s: %v\n", c.name, err)
			os.Exit(1)
		}
		ok, refused := counts(r.arrivals)
		fmt.Printf("%-16s %3d requests: %3d arrivals at nginx, %3d × 200, %3d × 429, %d failed, %.1f s\n",
			r.name, *n, len(r.arrivals), ok, refused, r.failed, r.elapsed.Seconds())
		runs = append(runs, r)
	}
	caption := []string{
		fmt.Sprintf("nginx %s limit_req rate=%dr/s, no burst; each client against its own nginx, %d requests from %d goroutines, paced at %d/s;",
			version, *perSecond, *n, *workers, *perSecond),
		fmt.Sprintf("counted from nginx's access log ($msec). %s, %s, %d CPUs. cd bench && go run ./cmd/picture",
			time.Now().UTC().Format("2006-01-02"), runtime.Version(), runtime.NumCPU()),
	}
	if err := os.WriteFile(*out, []byte(svg(runs, *perSecond, caption)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "picture:", err)
		os.Exit(1)
	}
	fmt.Println("wrote", *out)
}

func counts(as []arrival) (ok, refused int) {
	for _, a := range as {
		switch a.status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			refused++
		}
	}
	return ok, refused
}

// runOne starts a fresh nginx, sends n GETs through the client build
// returns from workers goroutines, stops nginx and reads its access log.
func runOne(name string, build func(http.RoundTripper, string) *http.Client, perSecond, n, workers int) (run, error) {
	ng, err := startNginx(perSecond)
	if err != nil {
		return run{}, err
	}
	defer os.RemoveAll(ng.dir)
	base := &http.Transport{MaxIdleConnsPerHost: workers}
	client := build(base, ng.host)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	jobs := make(chan int, n)
	for i := range n {
		jobs <- i
	}
	close(jobs)
	var mu sync.Mutex
	failed := 0
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/item/%d", ng.host, i), nil)
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	r := run{name: name, elapsed: time.Since(start), failed: failed}
	base.CloseIdleConnections()
	if err := ng.stop(); err != nil {
		return r, err
	}
	r.arrivals, err = ng.arrivals()
	return r, err
}

// nginx is a running nginx of one run.
type nginx struct {
	dir  string
	host string
	cmd  *exec.Cmd
	done chan error
}

// conf is nginx's configuration: one limit_req zone keyed by the client's
// address, without burst, answering 429 for a refusal, and a static file
// (served after limit_req; "return 200" would act before it). See
// https://nginx.org/en/docs/http/ngx_http_limit_req_module.html.
const conf = `daemon off;
master_process off;
worker_processes 1;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log;
events { worker_connections 256; }
http {
    client_body_temp_path {{dir}}/client_body;
    proxy_temp_path {{dir}}/proxy;
    fastcgi_temp_path {{dir}}/fastcgi;
    uwsgi_temp_path {{dir}}/uwsgi;
    scgi_temp_path {{dir}}/scgi;
    log_format picture '$msec $status';
    access_log {{dir}}/access.log picture;
    limit_req_zone $binary_remote_addr zone=z:1m rate={{rate}}r/s;
    server {
        listen {{host}};
        location / {
            limit_req zone=z;
            limit_req_status 429;
            root {{dir}}/www;
            try_files /ok.txt =404;
        }
    }
}
`

func nginxBinary() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/sbin/nginx"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("nginx not found (apt-get install nginx-light)")
}

func nginxVersion() (string, error) {
	bin, err := nginxBinary()
	if err != nil {
		return "", err
	}
	b, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s -v: %v", bin, err)
	}
	_, v, _ := strings.Cut(strings.TrimSpace(string(b)), "nginx/")
	return v, nil
}

// startNginx starts nginx on a free port of 127.0.0.1 in a new temporary
// directory and waits until it accepts connections.
func startNginx(perSecond int) (*nginx, error) {
	bin, err := nginxBinary()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	host := ln.Addr().String()
	ln.Close()
	dir, err := os.MkdirTemp("", "pace-picture-")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "www"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "www", "ok.txt"), []byte("ok\n"), 0o644); err != nil {
		return nil, err
	}
	c := strings.NewReplacer("{{dir}}", dir, "{{host}}", host, "{{rate}}", strconv.Itoa(perSecond)).Replace(conf)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-p", dir+"/", "-c", path, "-e", filepath.Join(dir, "error.log"))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ng := &nginx{dir: dir, host: host, cmd: cmd, done: make(chan error, 1)}
	go func() { ng.done <- cmd.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", host, 100*time.Millisecond); err == nil {
			c.Close()
			return ng, nil
		}
		if time.Now().After(deadline) {
			_ = ng.stop()
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return nil, fmt.Errorf("nginx not accepting connections on %s: %s", host, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop stops nginx (SIGTERM, then SIGKILL after 5 s) and waits for it.
func (ng *nginx) stop() error {
	_ = ng.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ng.done:
	case <-time.After(5 * time.Second):
		_ = ng.cmd.Process.Kill()
		<-ng.done
	}
	return nil
}

// arrivals reads the access log: "$msec $status" a line.
func (ng *nginx) arrivals() ([]arrival, error) {
	f, err := os.Open(filepath.Join(ng.dir, "access.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var as []arrival
	var first int64 = -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		msec, status, ok := strings.Cut(sc.Text(), " ")
		sec, ms, ok2 := strings.Cut(msec, ".")
		s, err1 := strconv.ParseInt(sec, 10, 64)
		m, err2 := strconv.ParseInt(ms, 10, 64)
		st, err3 := strconv.Atoi(status)
		if !ok || !ok2 || err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("access log: bad line %q", sc.Text())
		}
		t := s*1000 + m
		if first < 0 {
			first = t
		}
		as = append(as, arrival{at: time.Duration(t-first) * time.Millisecond, status: st})
	}
	return as, sc.Err()
}
