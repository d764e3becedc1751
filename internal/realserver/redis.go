package realserver

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Redis is a running redis-server started by [StartRedis].
type Redis struct {
	addr string // 127.0.0.1:port
	dir  string
	log  string
	bin  string
	args []string

	mu      sync.Mutex
	p       *proc // the running process, replaced by Restart
	stopped bool
	stopErr error
}

// StartRedis starts redis-server on a free port of 127.0.0.1 with no
// persistence (--save "" --appendonly no), its files in a new t.TempDir(),
// extra arguments appended (such as "--maxmemory", "10mb"), and waits up to
// 5 s until it answers PING. t.Cleanup stops it (SIGTERM, then SIGKILL after
// 5 s) and waits for it.
//
// When redis-server is not installed or does not start, t is skipped, or
// failed when CI=true.
func StartRedis(t testing.TB, args ...string) *Redis {
	t.Helper()
	bin, err := lookBinary("redis-server")
	if err != nil {
		unavailable(t, "redis-server not installed (apt-get install redis-server): %v", err)
	}
	return start(t, "redis-server", "in use", func() (*Redis, error) { return startRedis(t, bin, args) })
}

func startRedis(t testing.TB, bin string, extra []string) (*Redis, error) {
	dir := t.TempDir()
	port := FreePort(t)
	r := &Redis{
		addr: fmt.Sprintf("127.0.0.1:%d", port),
		dir:  dir,
		log:  filepath.Join(dir, "redis.log"),
		bin:  bin,
	}
	r.args = append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--daemonize", "no", "--dir", dir, "--logfile", r.log,
		"--pidfile", filepath.Join(dir, "redis.pid"),
	}, extra...)
	p, err := r.start()
	if err != nil {
		return nil, err
	}
	r.p = p
	return r, nil
}

// start starts redis-server with r's arguments and waits until it answers.
func (r *Redis) start() (*proc, error) {
	p, err := startProc(exec.Command(r.bin, r.args...))
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", r.bin, err)
	}
	err = p.waitReady(r.addr)
	if err == nil {
		err = ping(r.addr)
	}
	if err != nil {
		_ = p.stop()
		return nil, fmt.Errorf("%v; redis.log: %s", err, tail(r.log, 3))
	}
	return p, nil
}

// ping sends PING until redis answers +PONG (it answers -LOADING while it
// loads), within startTimeout.
func ping(addr string) error {
	deadline := time.Now().Add(startTimeout)
	for {
		reply, err := pingOnce(addr)
		if err == nil && reply == "+PONG" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PING %s: %q, %v after %v", addr, reply, err, startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func pingOnce(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// Addr returns redis's address, "127.0.0.1:port".
func (r *Redis) Addr() string { return r.addr }

// Dir returns the directory holding redis's files and log.
func (r *Redis) Dir() string { return r.dir }

// Stop stops redis-server now (SIGTERM by PID, then SIGKILL after 5 s) and
// waits for it; later calls, and the cleanup, return the first call's
// result.
func (r *Redis) Stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.stopped = true
		if sigCont != nil {
			_ = r.p.cmd.Process.Signal(sigCont) // after Suspend: SIGTERM waits while stopped
		}
		r.stopErr = r.p.stop()
	}
	return r.stopErr
}

// Kill kills redis-server at once (SIGKILL by PID), as a crash would, and
// waits for it to exit. Restart starts it again.
func (r *Redis) Kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return fmt.Errorf("redis-server on %s was stopped", r.addr)
	}
	if err := r.p.cmd.Process.Kill(); err != nil {
		return err
	}
	select {
	case <-r.p.exited:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("pid %d survived SIGKILL for %v", r.p.cmd.Process.Pid, stopTimeout)
	}
}

// Suspend stops redis-server with SIGSTOP (by PID): it keeps its port and
// the kernel keeps accepting connections, but nothing is answered until
// Resume (SIGCONT), as with a Redis stalled by a fork or a swap storm. Stop
// resumes it first.
func (r *Redis) Suspend() error { return r.signal(sigStop) }

// Resume continues a redis-server stopped by Suspend (SIGCONT by PID).
func (r *Redis) Resume() error { return r.signal(sigCont) }

func (r *Redis) signal(sig os.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case sig == nil:
		return errors.New("SIGSTOP and SIGCONT exist only on Unix")
	case r.stopped:
		return fmt.Errorf("redis-server on %s was stopped", r.addr)
	}
	return r.p.cmd.Process.Signal(sig)
}

// Restart starts redis-server again on the same port, with the same
// arguments (and, without persistence, no data), after Kill, and waits
// until it answers PING.
func (r *Redis) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.p.exited:
	default:
		return fmt.Errorf("redis-server on %s is still running", r.addr)
	}
	if r.stopped {
		return fmt.Errorf("redis-server on %s was stopped", r.addr)
	}
	p, err := r.start()
	if err != nil {
		return err
	}
	r.p = p
	return nil
}
