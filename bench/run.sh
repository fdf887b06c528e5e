#!/usr/bin/env bash
# shardgate's benchmark harnesses: `make bench`, or `bash bench/run.sh [flags]`.
# Builds the harness into a temporary directory and runs it; every flag is
# passed on (`bash bench/run.sh -h` lists them, bench/README.md explains):
#   bash bench/run.sh [-scenario select|tpcb] ...   bench/pgbench (pgbench through pgbouncer and shardgate)
#   bash bench/run.sh -scenario scatter ...         bench/scatter (cross-shard queries, COPY, streaming memory)
#   bash bench/run.sh -scenario workflow ...        bench/workflow (MoveTables copy vs raw COPY, stream apply rate)
#   bash bench/run.sh -scenario reshard ...         bench/reshard (Reshard 2 -> 4 under pgbench through the proxy, VDiff, oracle)
#   bash bench/run.sh -scenario switch ...          bench/reshard -switch (switch, reverse, switch under pgbench on two proxies: pauses)
#   bash bench/run.sh -scenario gsi ...             bench/gsi (reads through a global secondary index vs scatter vs shard key)
#   bash bench/run.sh -scenario join ...            bench/join (a join of two groups over intermediate results vs one Postgres)
#   bash bench/run.sh -scenario replicas ...        bench/replicas (pgbench -S on standbys: per-host transaction counts)
#   bash bench/run.sh -scenario failover ...        bench/failover (kill -9 of a primary and a SWITCHOVER under pgbench on two proxies: oracle, resume, pause)
#   bash bench/run.sh -scenario gsi-backfill ...    bench/gsi -backfill (1 M rows back-filled under a pgbench write load, SIGKILLed, resumed, exact)
#   bash bench/run.sh -scenario verify ...          bench/verify (shardgate verify of 1 M rows: xxhash keys in Go, range in SQL, reference copies)
# BENCH_SECONDS sets the length of each pgbench run (default 15; -T wins).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
harness=pgbench
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -scenario=scatter|--scenario=scatter) harness=scatter ;;
    -scenario=gsi|--scenario=gsi) harness=gsi ;;
    -scenario=gsi-backfill|--scenario=gsi-backfill) harness=gsi; args+=(-backfill) ;;
    -scenario=workflow|--scenario=workflow) harness=workflow ;;
    -scenario=reshard|--scenario=reshard) harness=reshard ;;
    -scenario=switch|--scenario=switch) harness=reshard; args+=(-switch) ;;
    -scenario=join|--scenario=join) harness=join ;;
    -scenario=replicas|--scenario=replicas) harness=replicas ;;
    -scenario=verify|--scenario=verify) harness=verify ;;
    -scenario=failover|--scenario=failover) harness=failover ;;
    -scenario|--scenario)
      case "${2:-}" in
        scatter|workflow|reshard|gsi|join|replicas|verify|failover) harness=$2; shift ;;
        gsi-backfill) harness=gsi; args+=(-backfill); shift ;;
        switch) harness=reshard; args+=(-switch); shift ;;
        *) args+=("$1") ;;
      esac ;;
    *) args+=("$1") ;;
  esac
  shift
done
if [ "$harness" = pgbench ] && ! command -v pgbouncer >/dev/null 2>&1 && ! [ -x /usr/sbin/pgbouncer ]; then
  echo "bench: pgbouncer is not installed: its rows will say so (Debian: apt-get install pgbouncer," \
       "or WITH_BENCH=1 bash scripts/ensure-deps.sh)" >&2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardgate-bench-bin-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/bench-$harness" "./bench/$harness"
invoked="bash bench/run.sh"
if [ "$harness" != pgbench ]; then invoked+=" -scenario $harness"; fi
status=0
BENCH_INVOKED_AS="$invoked${args[*]:+ ${args[*]}}" "$tmp/bench-$harness" -repo "$PWD" ${args[@]+"${args[@]}"} || status=$?
exit "$status"
