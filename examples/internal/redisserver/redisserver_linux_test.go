//go:build linux

package redisserver

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParentProcess is the parent of TestDiesWithParent: it starts a
// redis-server, prints its PID, and waits to be killed.
func TestParentProcess(t *testing.T) {
	if os.Getenv("REDISSERVER_PARENT") != "1" {
		return // run by TestDiesWithParent only
	}
	s, err := Start(context.Background())
	if err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString(strconv.Itoa(s.cmd.Process.Pid) + "\n")
	time.Sleep(time.Minute)
	os.Exit(4)
}

// TestDiesWithParent: a program killed with SIGKILL leaves no
// redis-server behind: it gets SIGKILL with its parent. Before, the
// fleet example's redis-server ran on after its parent was killed.
func TestDiesWithParent(t *testing.T) {
	if _, err := Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: redis-server not installed")
		}
		t.Skip("redis-server not installed")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestParentProcess$")
	cmd.Env = append(os.Environ(), "REDISSERVER_PARENT=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	require.True(t, alive(pid), "redis-server runs")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.False(t, alive(pid), "redis-server still runs after its parent was killed")
}

// alive reports whether process pid runs (exists and is no zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
