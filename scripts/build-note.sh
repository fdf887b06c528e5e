#!/usr/bin/env bash
# Says so before a build when the SQL parser (pg_query, C code compiled
# through cgo) is not in Go's build cache yet: compiling it takes about
# 7 minutes on a 2-core machine, and the Go tool prints nothing meanwhile.
# Later builds take it from the cache (go env GOCACHE).
set -uo pipefail
GO=${GO:-go}
pkg=github.com/pganalyze/pg_query_go/v6
if [ "$($GO list -f '{{.Stale}}' "$pkg" 2>/dev/null)" != false ]; then
  echo "note: the first build compiles the SQL parser (pg_query, C through cgo): about 7 minutes on 2 cores, with no output meanwhile. Later builds reuse Go's build cache." >&2
fi
exit 0
