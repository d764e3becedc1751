//go:build unix && !solaris && !aix

package batch

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJournalNotRegular: a journal path that names a FIFO or a device
// (/dev/zero), or a file over the 1 GiB bound, is refused at once with a
// *JournalError, before anything runs, and without reading the file: the
// heap stays flat. (A FIFO made Run block forever; /dev/zero grew the heap
// without bound.)
func TestJournalNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	sparse := filepath.Join(dir, "large.jsonl")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(maxJournalSize+1)) // sparse: no disk used
	require.NoError(t, f.Close())

	for _, tt := range []struct {
		name, path string
		want       error
	}{
		{"FIFO", fifo, errNotRegular},
		{"/dev/zero", "/dev/zero", errNotRegular},
		{"directory", dir, errNotRegular},
		{"over the bound", sparse, errTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			type result struct {
				rep *Report
				err error
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				rep, err := Run(context.Background(), ints(3), func(context.Context, int) error { return nil }, Options{Journal: tt.path})
				done <- result{rep, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Run on %s did not return", tt.path)
			}
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			var je *JournalError
			require.ErrorAs(t, r.err, &je)
			assert.Equal(t, tt.path, je.Path)
			assert.ErrorIs(t, r.err, tt.want)
			assert.Nil(t, r.rep)
			assert.Less(t, elapsed, 100*time.Millisecond)
			assert.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(1<<20), "heap growth")
		})
	}
}
