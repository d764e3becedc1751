#!/usr/bin/env bash
# Runs the peer comparison benchmarks of this module with -benchmem and
# writes the raw output, headed by the machine's details, to results.txt
# (or $OUT). Sized for a 2-core machine: about 3½ minutes in all. Other
# load on the machine shows up in the figures: run it on an idle one.
#
#   ./run.sh                 every benchmark
#   ./run.sh 'Allow'         only those matching a -bench pattern
#   COUNT=10 BENCHTIME=1s ./run.sh
#   ROUNDS=8 COUNT=1 BENCHTIME=500ms OUT=results-redis.txt ./run.sh RedisDecision
#
# If benchstat is installed (go install golang.org/x/perf/cmd/benchstat@latest)
# the medians and their 95% confidence intervals are printed at the end
# (benchstat needs COUNT >= 6 for the intervals).
set -euo pipefail
cd "$(dirname "$0")"

PATTERN=${1:-.}
COUNT=${COUNT:-6}
BENCHTIME=${BENCHTIME:-300ms}
OUT=${OUT:-results.txt}

{
  echo "# date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "# go: $(go version)"
  echo "# pace: $(git -C .. describe --always --dirty 2>/dev/null || echo unknown)"
  echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
  echo "# cores: $(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
  echo "# command: go test -run '^\$' -bench '$PATTERN' -benchmem -benchtime=$BENCHTIME -count=$COUNT (${ROUNDS:-1} rounds)"
} >"$OUT"

# ROUNDS=n runs the whole pattern n times with -count=$COUNT each, so that
# contestants alternate (with -count alone, go test runs each benchmark's
# counts back to back, and a change in the machine's load between them
# shows up as a difference between contestants).
for _ in $(seq "${ROUNDS:-1}"); do
  go test -run '^$' -bench "$PATTERN" -benchmem -benchtime="$BENCHTIME" -count="$COUNT" -timeout 30m . | tee -a "$OUT"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" >>"$OUT"

if command -v benchstat >/dev/null; then
  benchstat "$OUT"
else
  echo "(install benchstat for medians: go install golang.org/x/perf/cmd/benchstat@latest)"
fi
