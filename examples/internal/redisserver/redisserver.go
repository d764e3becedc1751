// Package redisserver starts a redis-server for the examples that share
// limits through Redis: on a free loopback port, with no persistence.
package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/pacehttp/pace/examples/internal/child"
	"github.com/redis/go-redis/v9"
)

// ErrNotFound means redis-server is not installed.
var ErrNotFound = errors.New("redis-server not found; install it with `apt-get install redis-server`, or pass -redis host:port")

// SbinDirs are the directories Find looks in after PATH. A test that
// stages a machine without redis-server empties it.
var SbinDirs = []string{"/usr/sbin", "/usr/local/sbin"}

// Find finds redis-server in PATH or, since /usr/sbin is often
// missing from a user's PATH, in SbinDirs; else ErrNotFound.
func Find() (string, error) {
	if bin, err := exec.LookPath("redis-server"); err == nil {
		return bin, nil
	}
	for _, d := range SbinDirs {
		p := filepath.Join(d, "redis-server")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// Server is a redis-server this program started.
type Server struct {
	Addr   string // host:port
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts redis-server on a free loopback port, with no
// persistence, its files in a temporary directory, and waits until it
// answers PING (5 s at most).
func Start(ctx context.Context) (*Server, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "fleet-redis-")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	child.DieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := rdb.Ping(pctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			s.Stop()
			return nil, fmt.Errorf("redis-server exited at start; see its log in %s", dir)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.Stop()
			return nil, fmt.Errorf("redis-server on %s does not answer: %v", s.Addr, err)
		}
	}
}

// Stop stops the server by PID (SIGTERM, SIGKILL after 5 s) and removes its
// directory.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}

// Check reports whether addr is a host:port with a port from 1 to 65535
// (an empty host is the local one) where a Redis answers (CheckAnswers).
// The error says what is wrong, in one line.
func Check(addr string) error {
	if err := checkAddr(addr); err != nil {
		return err
	}
	return CheckAnswers(addr)
}

// checkAddr reports whether addr is a host:port a client can dial, with a
// port from 1 to 65535.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-redis %q: want host:port", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("-redis %q: want a port from 1 to 65535", addr)
	}
	return nil
}

// CheckAnswers reports whether a Redis at addr answers PING within 2 s
// (any reply counts, an error such as NOAUTH too). It dials bare, so that
// go-redis logs nothing. The error says what went wrong, in one line.
func CheckAnswers(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return fmt.Errorf("-redis %q: no Redis answers there: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	var b [1]byte
	if _, err = conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err == nil {
		_, err = conn.Read(b[:])
	}
	if err != nil || (b[0] != '+' && b[0] != '-') {
		return fmt.Errorf("-redis %q: no Redis answers there (PING: %v)", addr, err)
	}
	return nil
}
