//go:build linux

package batch

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// journalFD returns the descriptor of this process that is open on path.
func journalFD(t *testing.T, path string) int {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, de := range des {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", de.Name())); err == nil && target == path {
			fd, err := strconv.Atoi(de.Name())
			require.NoError(t, err)
			return fd
		}
	}
	t.Fatalf("no descriptor open on %s", path)
	return -1
}

// TestJournalFullMidRun: a journal that cannot be written mid-run (the
// disk full: /dev/full put under the journal's descriptor while item 3
// runs) stops the run. Run returns the Report and an *Error that matches
// the *JournalError and ENOSPC; it starts no item after the failure.
// Item 3, whose end could not be recorded, is Succeeded in this Report and
// in doubt to a resumed run, which does it again only when that is safe
// (Options.Journal): here when Idempotent says so. Every other item is
// done once across the two runs.
func TestJournalFullMidRun(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		t.Run("idempotent="+strconv.FormatBool(idempotent), func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir()) // as /proc/self/fd names it
			require.NoError(t, err)
			path := filepath.Join(dir, "journal.jsonl")
			items := make([]int, 8)
			done := make([]int, len(items))
			opts := Options{Concurrency: 1, Journal: path}
			fn := func(_ context.Context, i int) error {
				done[i]++
				if i == 3 && done[i] == 1 {
					full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
					require.NoError(t, err)
					defer full.Close()
					require.NoError(t, syscall.Dup3(int(full.Fd()), journalFD(t, path), syscall.O_CLOEXEC))
				}
				return nil
			}
			for i := range items {
				items[i] = i
			}
			rep, err := Run(context.Background(), items, fn, opts)
			require.Error(t, err)
			var be *Error
			var je *JournalError
			require.ErrorAs(t, err, &be)
			require.ErrorAs(t, err, &je)
			assert.ErrorIs(t, err, syscall.ENOSPC)
			assert.Equal(t, path, je.Path)
			require.NotNil(t, rep)
			assert.Equal(t, Succeeded, rep.Results[3].Outcome, "the call itself succeeded")
			assert.Equal(t, []int{1, 1, 1, 1, 0, 0, 0, 0}, done, "no item starts after the journal failed")

			if idempotent {
				opts.Idempotent = func(i int) bool { return true }
			}
			rep, err = Run(context.Background(), items, fn, opts)
			want := []int{1, 1, 1, 1, 1, 1, 1, 1}
			if idempotent {
				require.NoError(t, err)
				want[3] = 2
				assert.Equal(t, Succeeded, rep.Results[3].Outcome)
			} else {
				require.ErrorAs(t, err, &be)
				assert.Equal(t, 1, be.InDoubt)
				assert.Equal(t, InDoubt, rep.Results[3].Outcome)
				assert.ErrorIs(t, rep.Results[3].Err, ErrInDoubt)
			}
			assert.Equal(t, want, done)
		})
	}
}
