//go:build linux

package realserver

import "syscall"

// favour raises the scheduling priority of the server process pid (nice
// -10) when the tests may (as root, as in CI), so that a real server's
// arrival times are not its own scheduling delays behind the test process
// on a 2-core machine: a real API's server does not share its CPU with its
// client. Without the privilege it changes nothing.
func favour(pid int) { _ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, -10) }
