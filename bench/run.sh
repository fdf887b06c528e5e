#!/usr/bin/env bash
# shardgate's benchmark harness: `make bench`, or `bash bench/run.sh [flags]`.
# Builds bench/pgbench into a temporary directory and runs it; every flag is
# passed on (`bash bench/run.sh -h` lists them, bench/README.md explains).
# BENCH_SECONDS sets the length of each pgbench run (default 15; -T wins).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v pgbouncer >/dev/null 2>&1 && ! [ -x /usr/sbin/pgbouncer ]; then
  echo "bench: pgbouncer is not installed: its rows will say so (Debian: apt-get install pgbouncer," \
       "or WITH_BENCH=1 bash scripts/ensure-deps.sh)" >&2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardgate-bench-bin-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/bench-pgbench" ./bench/pgbench
status=0
BENCH_INVOKED_AS="bash bench/run.sh${*:+ $*}" "$tmp/bench-pgbench" -repo "$PWD" "$@" || status=$?
exit "$status"
