//go:build !unix

package realserver

import "os"

// sigStop and sigCont are nil where the system has no SIGSTOP and SIGCONT:
// Redis.Suspend and Redis.Resume return an error.
var sigStop, sigCont os.Signal
