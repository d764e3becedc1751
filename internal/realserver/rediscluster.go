package realserver

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RedisCluster is a running Redis Cluster of masters without replicas,
// started by [StartRedisCluster].
type RedisCluster struct {
	bin      string
	nodes    []*proc
	args     [][]string // each node's arguments, for Restart
	addrs    []string
	stopOnce sync.Once
	stopErr  error
}

// StartRedisCluster starts a Redis Cluster of masters (at least 3) on
// free ports of 127.0.0.1, each redis-server with --cluster-enabled yes and
// no persistence, its files in a new t.TempDir(), extra arguments appended
// to each (such as "--cluster-node-timeout", "1000"), joins them with
// `redis-cli --cluster create … --cluster-replicas 0 --cluster-yes`, and
// waits up to 10 s until every node reports cluster_state:ok. t.Cleanup
// stops every node by PID.
//
// When redis-server or redis-cli is not installed or the cluster does not
// form, t is skipped, or failed when CI=true.
func StartRedisCluster(t testing.TB, masters int, args ...string) *RedisCluster {
	t.Helper()
	bin, err := lookBinary("redis-server")
	if err != nil {
		unavailable(t, "redis-server not installed (apt-get install redis-server): %v", err)
	}
	cli, err := lookBinary("redis-cli")
	if err != nil {
		unavailable(t, "redis-cli not installed (apt-get install redis-tools): %v", err)
	}
	return start(t, "the Redis Cluster", "", func() (*RedisCluster, error) { return startCluster(t, bin, cli, max(masters, 3), args) })
}

func startCluster(t testing.TB, bin, cli string, masters int, extra []string) (*RedisCluster, error) {
	dir := t.TempDir()
	c := &RedisCluster{bin: bin}
	for range masters {
		port := FreePort(t)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		args := append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port)),
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", dir,
			"--logfile", filepath.Join(dir, fmt.Sprintf("redis-%d.log", port)),
		}, extra...)
		p, err := startProc(exec.Command(bin, args...))
		if err != nil {
			_ = c.Stop()
			return nil, fmt.Errorf("starting %s: %w", bin, err)
		}
		c.nodes, c.args, c.addrs = append(c.nodes, p), append(c.args, args), append(c.addrs, addr)
		if err := p.waitReady(addr); err != nil {
			_ = c.Stop()
			return nil, fmt.Errorf("node %s: %v", addr, err)
		}
	}
	args := append([]string{"--cluster", "create"}, c.addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, lastLines(string(out), 3))
	}
	deadline := time.Now().Add(2 * startTimeout)
	for _, addr := range c.addrs {
		host, port, _ := strings.Cut(addr, ":")
		for {
			out, err := exec.Command(cli, "-h", host, "-p", port, "cluster", "info").Output()
			if err == nil && strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Stop()
				return nil, fmt.Errorf("node %s: no cluster_state:ok after %v: %v %s", addr, 2*startTimeout, err, lastLines(string(out), 2))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c, nil
}

// Addrs returns the masters' addresses, "127.0.0.1:port" each.
func (c *RedisCluster) Addrs() []string { return c.addrs }

// Kill kills the master at Addrs()[i] at once (SIGKILL by PID), as a crash
// would, and waits for it to exit. The cluster has no replicas to take
// over its slots.
func (c *RedisCluster) Kill(i int) error {
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("no node %d of %d", i, len(c.nodes))
	}
	p := c.nodes[i]
	if err := p.cmd.Process.Kill(); err != nil {
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopTimeout):
		return fmt.Errorf("pid %d survived SIGKILL for %v", p.cmd.Process.Pid, stopTimeout)
	}
}

// Restart starts the master at Addrs()[i] again after Kill, on the same
// port and with the same arguments: it keeps its cluster identity and
// slots (its nodes file), not its data. It waits until the node accepts
// connections, not until the cluster is ok again. Call it before Stop.
func (c *RedisCluster) Restart(i int) error {
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("no node %d of %d", i, len(c.nodes))
	}
	select {
	case <-c.nodes[i].exited:
	default:
		return fmt.Errorf("node %s is still running", c.addrs[i])
	}
	p, err := startProc(exec.Command(c.bin, c.args[i]...))
	if err != nil {
		return fmt.Errorf("starting %s: %w", c.bin, err)
	}
	c.nodes[i] = p
	if err := p.waitReady(c.addrs[i]); err != nil {
		return fmt.Errorf("node %s: %v", c.addrs[i], err)
	}
	return nil
}

// Stop stops every node (SIGTERM by PID, then SIGKILL after 5 s) and waits
// for them; later calls return the first call's result.
func (c *RedisCluster) Stop() error {
	c.stopOnce.Do(func() {
		for _, p := range c.nodes {
			if err := p.stop(); err != nil && c.stopErr == nil {
				c.stopErr = err
			}
		}
	})
	return c.stopErr
}
