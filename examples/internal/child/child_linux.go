//go:build linux

package child

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes cmd's process receive SIGKILL when the thread
// that started it exits (prctl(2) PR_SET_PDEATHSIG), as the whole program
// does when it is killed, so that a parent killed with SIGKILL leaves no
// child behind. Call it before cmd.Start.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
