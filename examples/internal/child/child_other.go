//go:build !linux

package child

import "os/exec"

// DieWithParent does nothing here: only Linux lets a child die with its
// parent (PR_SET_PDEATHSIG). A parent killed with SIGKILL leaves its
// children running.
func DieWithParent(*exec.Cmd) {}
