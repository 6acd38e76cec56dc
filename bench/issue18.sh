#!/bin/sh
# Every case of issue 18 on this machine, in one command (about 35 minutes on a quiet 2-core VM, 28 Nov): each data shape at
# 100,000 and at 1,000,000 sessions (bench/profiles.sh: list, history and agents_list over HTTP
# at every visibility, and the list statements' plans), then the sessions_send round trip
# (bench/send_bench.py, PostgreSQL + Redis, ping-pong 5 and 0) and live append → subscriber
# (bench/live_bench.py, 500 subscribers at 100 messages/s), then the tables for BENCHMARKS.md.
# Run it on a quiet machine: `uptime` is printed before every step and kept with every figure.
#
#   PG_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/5 \
#       bench/issue18.sh 2>&1 | tee bench/results/issue18.log
#
# PG_URL is dropped and filled again for every profile. send_bench and live_bench drop and make
# their own databases (SEND_BENCH_DB / LIVE_BENCH_DB, default sendbench / livebench) and empty
# their Redis databases (SEND_BENCH_REDIS_DB / LIVE_BENCH_REDIS_DB, default 7 / 9).
# Env: SIZES (default "100000 1000000"), PROFILES (default: all six), MESSAGES_PER_SESSION
# (default 2: 1M sessions carry 3 M messages, a million of them in agent:main:main).
set -eu
cd "$(dirname "$0")/.."
PY=.venv/bin/python
export MESSAGES_PER_SESSION=${MESSAGES_PER_SESSION:-2}
for size in ${SIZES:-100000 1000000}; do
    # shellcheck disable=SC2086
    bench/profiles.sh "$size" ${PROFILES:-}
done
echo "== sessions_send round trip ($(uptime))"
$PY bench/send_bench.py --only pg-redis --label issue18
echo "== live append -> subscriber ($(uptime))"
$PY bench/live_bench.py --only pg-redis --subscribers 500 --rates 100 --seconds 20 \
    --label issue18
echo "== done ($(uptime))"
$PY bench/profiles_table.py
