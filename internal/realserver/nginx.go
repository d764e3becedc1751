package realserver

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"
)

// NginxConf is the limit_req setup of a test nginx: one zone keyed by
// $binary_remote_addr and one location that answers every path with 200
// "ok\n" (a static file), or limit_req_status 429 when the zone refuses. See
// https://nginx.org/en/docs/http/ngx_http_limit_req_module.html.
type NginxConf struct {
	// Rate is limit_req_zone's rate, such as "10r/s" or "600r/m".
	// Required.
	Rate string

	// Burst is limit_req's burst; 0 leaves it out (no burst).
	Burst int

	// NoDelay adds limit_req's nodelay: requests within the burst are
	// served at once instead of being delayed.
	NoDelay bool
}

// Nginx is a running nginx started by [StartNginx].
type Nginx struct {
	t         testing.TB
	host      string // 127.0.0.1:port
	dir       string
	accessLog string
	errorLog  string
	p         *proc
	stopOnce  sync.Once
	stopErr   error
}

// Entry is one line of the access log.
type Entry struct {
	Time     time.Time     // $msec: when nginx wrote the line, millisecond resolution
	Status   int           // $status
	Conn     uint64        // $connection: serial number of the connection
	ConnReqs int           // $connection_requests: this request's number on its connection
	Duration time.Duration // $request_time
	Request  string        // $request: the request line
}

// logFormat is what Entries parses: fixed fields first, the request line
// (which may hold spaces) last.
const logFormat = `$msec $status $connection $connection_requests $request_time "$request"`

var nginxConfTmpl = template.Must(template.New("nginx.conf").Parse(`# written by internal/realserver for one test
daemon off;
master_process off;
worker_processes 1;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log info;

events {
    worker_connections 256;
}

http {
    client_body_temp_path {{.Dir}}/client_body;
{{- range .TempPaths}}
    {{.}}_temp_path {{$.Dir}}/{{.}};
{{- end}}
    log_format pace '{{.LogFormat}}';
    access_log {{.Dir}}/access.log pace;
    keepalive_timeout 60s;

    limit_req_zone $binary_remote_addr zone=z:1m rate={{.Conf.Rate}};

    server {
        listen {{.Host}};
        server_name localhost;

        # Not "return 200": return acts in the rewrite phase, before
        # limit_req (preaccess), so nothing would ever be limited. A static
        # file is served in the content phase, after limit_req.
        location / {
            limit_req zone=z{{if .Conf.Burst}} burst={{.Conf.Burst}}{{end}}{{if .Conf.NoDelay}} nodelay{{end}};
            limit_req_status 429;
            root {{.Dir}}/www;
            default_type text/plain;
            try_files /ok.txt =404;
        }
    }
}
`))

// nginxBuild describes the installed nginx: which *_temp_path directives
// its modules accept (a --without-http_fastcgi_module build rejects
// fastcgi_temp_path).
type nginxBuild struct {
	tempPaths []string
	err       error
}

var (
	nginxBuildOnce sync.Once
	nginxBuildInfo nginxBuild
)

func detectNginx(bin string) nginxBuild {
	nginxBuildOnce.Do(func() {
		out, err := exec.Command(bin, "-V").CombinedOutput()
		if err != nil {
			nginxBuildInfo.err = fmt.Errorf("%s -V: %v: %s", bin, err, strings.TrimSpace(string(out)))
			return
		}
		for _, m := range []string{"proxy", "fastcgi", "uwsgi", "scgi"} {
			if !strings.Contains(string(out), "--without-http_"+m+"_module") {
				nginxBuildInfo.tempPaths = append(nginxBuildInfo.tempPaths, m)
			}
		}
	})
	return nginxBuildInfo
}

// StartNginx writes an nginx.conf for conf into a new t.TempDir(), starts
// nginx on a free port of 127.0.0.1 in the foreground with master_process
// off (one process, so stopping it by PID stops everything), and waits up
// to 5 s until it accepts connections. t.Cleanup stops it (SIGTERM, then
// SIGKILL after 5 s) and waits for it. The access log is unbuffered, so a
// request's line is written before nginx reads its next event; call
// [Nginx.Stop] before reading the log to be sure every line is in.
//
// When nginx is not installed or does not start, t is skipped, or failed
// when CI=true.
func StartNginx(t testing.TB, conf NginxConf) *Nginx {
	t.Helper()
	if conf.Rate == "" {
		t.Fatalf("StartNginx: NginxConf.Rate is empty")
	}
	bin, err := lookBinary("nginx")
	if err != nil {
		unavailable(t, "nginx not installed (apt-get install nginx-light): %v", err)
	}
	build := detectNginx(bin)
	if build.err != nil {
		unavailable(t, "nginx unusable: %v", build.err)
	}
	return start(t, "nginx", "Address already in use", func() (*Nginx, error) { return startNginx(t, bin, build, conf) })
}

func startNginx(t testing.TB, bin string, build nginxBuild, conf NginxConf) (*Nginx, error) {
	dir := t.TempDir()
	n := &Nginx{
		t:         t,
		host:      fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		dir:       dir,
		accessLog: filepath.Join(dir, "access.log"),
		errorLog:  filepath.Join(dir, "error.log"),
	}
	if err := os.Mkdir(filepath.Join(dir, "www"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "www", "ok.txt"), []byte("ok\n"), 0o644); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "nginx.conf")
	f, err := os.Create(confPath)
	if err != nil {
		return nil, err
	}
	err = nginxConfTmpl.Execute(f, map[string]any{
		"Dir": dir, "Host": n.host, "Conf": conf,
		"TempPaths": build.tempPaths, "LogFormat": logFormat,
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", confPath, err)
	}
	// -e: the error log from the first instant, before the config is read
	// (the built-in one may be a file we cannot open).
	cmd := exec.Command(bin, "-p", dir+"/", "-c", confPath, "-e", n.errorLog)
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy
	cmd.Stdout, cmd.Stderr = out, out
	p, err := startProc(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	n.p = p
	favour(cmd.Process.Pid)
	if err := p.waitReady(n.host); err != nil {
		_ = p.stop()
		return nil, fmt.Errorf("%v; error.log: %s", err, tail(n.errorLog, 3))
	}
	return n, nil
}

// Host returns nginx's address, "127.0.0.1:port": the key of pace.Hosts
// for URLs from [Nginx.URL].
func (n *Nginx) Host() string { return n.host }

// URL returns "http://127.0.0.1:port".
func (n *Nginx) URL() string { return "http://" + n.host }

// Dir returns the directory holding nginx.conf and the logs.
func (n *Nginx) Dir() string { return n.dir }

// Stop stops nginx now (SIGTERM by PID, then SIGKILL after 5 s) and waits
// for it; later calls, and the cleanup, return the first call's result.
// After Stop the access log holds every request nginx answered.
func (n *Nginx) Stop() error {
	n.stopOnce.Do(func() { n.stopErr = n.p.stop() })
	return n.stopErr
}

// Entries parses the access log as it is now.
func (n *Nginx) Entries() ([]Entry, error) {
	f, err := os.Open(n.accessLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var es []Entry
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		e, err := parseEntry(sc.Text())
		if err != nil {
			return es, fmt.Errorf("%s:%d: %v", n.accessLog, line, err)
		}
		es = append(es, e)
	}
	return es, sc.Err()
}

// Statuses counts the access log's lines by status; a log it cannot read
// fails the test.
func (n *Nginx) Statuses() map[int]int {
	n.t.Helper()
	es, err := n.Entries()
	if err != nil {
		n.t.Errorf("nginx access log: %v", err)
	}
	m := make(map[int]int)
	for _, e := range es {
		m[e.Status]++
	}
	return m
}

// Count is Statuses()[status].
func (n *Nginx) Count(status int) int {
	n.t.Helper()
	return n.Statuses()[status]
}

// ErrorLog returns nginx's error log, where limit_req writes "limiting
// requests, excess: …" for each refusal.
func (n *Nginx) ErrorLog() string {
	b, _ := os.ReadFile(n.errorLog)
	return string(b)
}

// parseEntry parses one line in logFormat.
func parseEntry(line string) (Entry, error) {
	fields := strings.SplitN(line, " ", 6)
	if len(fields) != 6 {
		return Entry{}, fmt.Errorf("want 6 fields, got %q", line)
	}
	var e Entry
	var err error
	if e.Time, err = parseMsec(fields[0]); err != nil {
		return Entry{}, err
	}
	if e.Status, err = strconv.Atoi(fields[1]); err != nil {
		return Entry{}, fmt.Errorf("status: %v", err)
	}
	if e.Conn, err = strconv.ParseUint(fields[2], 10, 64); err != nil {
		return Entry{}, fmt.Errorf("connection: %v", err)
	}
	if e.ConnReqs, err = strconv.Atoi(fields[3]); err != nil {
		return Entry{}, fmt.Errorf("connection_requests: %v", err)
	}
	if e.Duration, err = parseMsec3(fields[4]); err != nil {
		return Entry{}, fmt.Errorf("request_time: %v", err)
	}
	e.Request = strings.Trim(fields[5], `"`)
	return e, nil
}

// parseMsec parses $msec, seconds since the epoch with three decimals.
func parseMsec(s string) (time.Time, error) {
	d, err := parseMsec3(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("msec: %v", err)
	}
	return time.Unix(0, int64(d)), nil
}

// parseMsec3 parses "S.mmm" (seconds, three decimals) exactly, without
// going through a float.
func parseMsec3(s string) (time.Duration, error) {
	sec, ms, ok := strings.Cut(s, ".")
	if !ok || len(ms) != 3 {
		return 0, fmt.Errorf("%q is not S.mmm", s)
	}
	a, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, err
	}
	b, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || b < 0 {
		return 0, fmt.Errorf("%q is not S.mmm", s)
	}
	return time.Duration(a)*time.Second + time.Duration(b)*time.Millisecond, nil
}

// Gaps returns the time between consecutive entries with the given status,
// in time order (on nginx's millisecond clock).
func Gaps(es []Entry, status int) []time.Duration {
	var ts []time.Time
	for _, e := range es {
		if e.Status == status {
			ts = append(ts, e.Time)
		}
	}
	slices.SortStableFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	gaps := make([]time.Duration, 0, max(len(ts)-1, 0))
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, ts[i].Sub(ts[i-1]))
	}
	return gaps
}
