// Command filesperrequest counts the source files of package pace and its
// internal packages that one request runs code in: a plain GET through a
// token bucket, and a GET answered 429 (Retry-After: 0) then 200.
//
// It builds itself with coverage of github.com/pacehttp/pace/..., runs
// that build once per scenario (a warm-up request, runtime/coverage's
// ClearCounters, the one request, WriteCountersDir), and counts the
// files with a nonzero counter in `go tool covdata textfmt`. Run it from
// the bench directory:
//
//	go run ./cmd/filesperrequest       # the counts
//	go run ./cmd/filesperrequest -v    # and the files, with their blocks run
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/coverage"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/pacehttp/pace"
)

const self = "github.com/pacehttp/pace/bench/cmd/filesperrequest"

func main() {
	child := flag.String("child", "", "internal: run one scenario (plain or 429) in a coverage build, writing counters to -dir")
	dir := flag.String("dir", "", "internal: the counters' directory")
	verbose := flag.Bool("v", false, "list the files and how many blocks of each ran")
	flag.Parse()
	if *child != "" {
		if err := scenario(*child, *dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := measure(*verbose); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// measure builds the coverage binary and prints each scenario's count.
func measure(verbose bool) error {
	tmp, err := os.MkdirTemp("", "filesperrequest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	build := exec.Command("go", "build", "-cover", "-covermode=atomic",
		"-coverpkg="+self+",github.com/pacehttp/pace/...", "-o", bin, self)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("coverage build: %w", err)
	}
	for _, name := range []string{"plain", "429"} {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		run := exec.Command(bin, "-child", name, "-dir", d)
		run.Env = append(os.Environ(), "GOCOVERDIR="+d)
		run.Stderr = os.Stderr
		if err := run.Run(); err != nil {
			return fmt.Errorf("scenario %s: %w", name, err)
		}
		out := filepath.Join(d, "profile.txt")
		if err := exec.Command("go", "tool", "covdata", "textfmt", "-i="+d, "-o="+out).Run(); err != nil {
			return fmt.Errorf("covdata: %w", err)
		}
		files, err := filesRun(out)
		if err != nil {
			return err
		}
		fmt.Printf("%s: %d files\n", name, len(files))
		if verbose {
			names := make([]string, 0, len(files))
			for f := range files {
				names = append(names, f)
			}
			sort.Strings(names)
			for _, f := range names {
				fmt.Printf("  %4d %s\n", files[f], f)
			}
		}
	}
	return nil
}

// filesRun returns the files of package pace and its internal packages
// with a nonzero counter in the text profile at path, and how many of
// their blocks ran.
func filesRun(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") || strings.HasSuffix(line, " 0") {
			continue
		}
		file, _, _ := strings.Cut(line, ":")
		file = strings.TrimPrefix(file, "github.com/pacehttp/pace/")
		if strings.HasPrefix(file, "bench/") {
			continue // this command
		}
		files[file]++
	}
	return files, sc.Err()
}

// scenario runs in the coverage build: a warm-up GET, then, counters
// cleared, the scenario's one request, whose counters it writes to dir.
func scenario(name, dir string) error {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/throttled-once" && n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		return err
	}
	c := &http.Client{Transport: &pace.Transport{
		Limits: pace.Hosts{u.Host: {Limit: pace.TokenBucket(pace.PerSecond(1000), 10)}},
	}}
	get := func(path string, want int) error {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("GET %s: status %d, want %d", path, resp.StatusCode, want)
		}
		return nil
	}
	if err := get("/", http.StatusOK); err != nil { // warm-up: first-use set-up is not counted
		return err
	}
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	path := "/"
	if name == "429" {
		path = "/throttled-once"
	}
	if err := get(path, http.StatusOK); err != nil {
		return err
	}
	if name == "429" && n.Load() != 2 {
		return fmt.Errorf("the server saw %d attempts, want 2 (a 429, then a 200)", n.Load())
	}
	return coverage.WriteCountersDir(dir)
}
