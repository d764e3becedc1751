// Package realserver starts real servers that nobody here wrote (nginx,
// redis-server) as subprocesses on free loopback ports, for tests that check
// pace against the limiters users actually meet. Each server lives in
// t.TempDir(), is stopped by PID in t.Cleanup, and reports what it saw from
// its own log, never from the client's view.
//
// When a server's binary is missing or it cannot start, the test is skipped
// with a one-line reason, except under CI (CI=true), where it fails: CI
// installs the servers (.ci/run), so a missing one there is a bug.
package realserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Bounds on a server's start and stop.
const (
	startTimeout = 5 * time.Second // until it accepts connections
	stopTimeout  = 5 * time.Second // after SIGTERM, before SIGKILL
	startTries   = 3               // a free port may be taken before the server binds it
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. It
// is a hint, not a reservation: another process may take it before the
// caller binds it, so starters retry on a fresh port.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("FreePort: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// unavailable skips t, or fails it under CI, with a one-line reason.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// lookBinary finds name in PATH or, since /usr/sbin is often missing from a
// user's PATH, in the sbin directories.
// start starts a server with run, up to startTries times while it fails
// with an error holding lostPort (a lost race for the port; "" means
// whatever the error), stops it at t's cleanup, and returns it. When it
// does not start, t is skipped, or failed when CI=true (see unavailable).
func start[S interface{ Stop() error }](t testing.TB, name, lostPort string, run func() (S, error)) S {
	t.Helper()
	var lastErr error
	for range startTries {
		s, err := run()
		if err == nil {
			t.Cleanup(func() {
				if err := s.Stop(); err != nil {
					t.Errorf("stopping %s: %v", name, err)
				}
			})
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), lostPort) {
			break // only a lost race for the port is worth another try
		}
	}
	unavailable(t, "%s did not start: %v", name, lastErr)
	var zero S
	return zero
}

func lookBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH or sbin", name)
}

// proc is a started server subprocess.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd.Wait returns
	err    error         // cmd.Wait's result, set before exited is closed
}

// startProc starts cmd and a goroutine that waits for it, so that exit is
// seen both while waiting for readiness and on stop.
func startProc(cmd *exec.Cmd) (*proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// waitReady waits until addr accepts a TCP connection, the process exits,
// or startTimeout passes.
func (p *proc) waitReady(addr string) error {
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before accepting connections: %v", p.err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections on %s after %v", addr, startTimeout)
		}
	}
}

// stop sends SIGTERM to the process (by PID), then SIGKILL if it has not
// exited within stopTimeout, and waits for it. It is safe to call twice.
func (p *proc) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM pid %d: %w", p.cmd.Process.Pid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = p.cmd.Process.Kill() // SIGKILL
	select {
	case <-p.exited:
		return fmt.Errorf("pid %d ignored SIGTERM for %v; killed", p.cmd.Process.Pid, stopTimeout)
	case <-time.After(stopTimeout):
		return fmt.Errorf("pid %d survived SIGKILL for %v", p.cmd.Process.Pid, stopTimeout)
	}
}

// tail returns the last lines of a log file, for error messages.
func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return lastLines(string(b), lines)
}

// lastLines returns the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}
