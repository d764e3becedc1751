//go:build unix

package realserver

import (
	"os"
	"syscall"
)

// sigStop and sigCont are Redis.Suspend's and Redis.Resume's signals.
var sigStop, sigCont os.Signal = syscall.SIGSTOP, syscall.SIGCONT
