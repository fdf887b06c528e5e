#!/usr/bin/env bash
# Makes sure the tools shardgate's tests and demo need are present.
# On a Debian-like machine running as root it installs what is missing;
# elsewhere it says exactly what to install and fails.
set -euo pipefail

need_pg=1
for d in /usr/lib/postgresql/*/bin; do
  [ -x "$d/initdb" ] && need_pg=0
done
if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then need_pg=0; fi
command -v initdb >/dev/null 2>&1 && need_pg=0

want=()
[ "$need_pg" = 1 ] && want+=(postgresql)
if [ "${WITH_BENCH:-0}" = 1 ]; then
  command -v pgbouncer >/dev/null 2>&1 || want+=(pgbouncer)
  command -v pgbench >/dev/null 2>&1 || want+=(postgresql-contrib)
fi
command -v runuser >/dev/null 2>&1 || want+=(util-linux)

if [ "${#want[@]}" -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "ensure-deps: installing ${want[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
  else
    echo "ensure-deps: missing ${want[*]}." >&2
    echo "  Debian/Ubuntu: sudo apt-get install ${want[*]}" >&2
    echo "  macOS:         brew install postgresql@15 (and pgbouncer for benchmarks)" >&2
    exit 1
  fi
fi

if ! command -v go >/dev/null 2>&1; then
  echo "ensure-deps: Go 1.26 or newer is required (https://go.dev/doc/install)" >&2
  exit 1
fi
