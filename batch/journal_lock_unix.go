//go:build unix && !aix && !(solaris && !illumos)

package batch

import (
	"errors"
	"os"
	"syscall"
)

// lockJournal takes an exclusive advisory lock, flock(2), on f without
// waiting. It returns ErrJournalLocked if another open file description,
// in this process or another, holds one. The lock goes with the open
// file: closing f releases it, and so does the process's death.
func lockJournal(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if errors.Is(ferr, syscall.EWOULDBLOCK) {
		return ErrJournalLocked
	}
	if ferr != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: ferr}
	}
	return nil
}
