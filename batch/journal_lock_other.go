//go:build !unix || aix || (solaris && !illumos)

package batch

import "os"

// lockJournal does nothing where the standard library offers no flock(2)
// (Windows, AIX, Solaris, Plan 9, js/wasm, WASI): there, nothing stops two
// runs from sharing a journal, and keeping to one run per journal is up to
// the caller.
func lockJournal(*os.File) error { return nil }
