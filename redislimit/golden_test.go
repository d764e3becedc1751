package redislimit

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/pacehttp/pace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden scripts in testdata/scripts")

// TestScriptsGolden: the Lua sent to Redis, for a token bucket, the zero
// Limit and a Limit of several parts, and the Settle, cancel, depart and
// lease scripts, is what testdata/scripts holds, so that a change of the
// scripts shows in review as a change of these files (go test -run
// TestScriptsGolden -update rewrites them). The scripts are built from
// the sections of lua/*.lua.
func TestScriptsGolden(t *testing.T) {
	shapes := []struct {
		file string
		l    pace.Limit
	}{
		{"decide-token-bucket.lua", pace.TokenBucket(pace.PerSecond(10), 5)},
		{"decide-no-limit.lua", pace.Limit{}},
		{"decide-all.lua", pace.All(pace.LeakyBucket(pace.PerSecond(10), pace.LeakyOptions{Queue: 4}),
			pace.FixedWindow(pace.PerMinute(100)), pace.SlidingLog(pace.PerHour(1000)))},
	}
	scripts := map[string]string{"settle.lua": settleText, "cancel.lua": cancelText, "depart.lua": departText, "lease.lua": leaseText}
	for _, sh := range shapes {
		ps, err := convert(sh.l, DefaultMargin)
		require.NoError(t, err)
		scripts[sh.file] = decideText(ps)
	}
	for file, text := range scripts {
		path := filepath.Join("testdata", "scripts", file)
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test -run TestScriptsGolden -update")
		assert.Equal(t, string(want), text, "%s differs from the script sent to Redis", path)
	}
}
