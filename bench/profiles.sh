#!/bin/sh
# The read benchmarks on every data shape (issue 18), PostgreSQL (+ REDIS_URL if set): for each
# profile, generate SESSIONS sessions, then bench/http_bench.py at visibility all (every case),
# the list cases again at agent, tree and self (as agent:main:main; at tree also as
# agent:main:orchestrator, the one-parent profiles' parent), and the list statements' plans
# (bench/list_plans.py). `uptime` is printed before each step and recorded with every case.
# Usage: PG_URL=postgres://…/db bench/profiles.sh [SESSIONS] [profile …]
# Env: REQUESTS (timed requests per case, default 100), MESSAGES_PER_SESSION (default 4).
# Results: bench/results/http-postgresql-<profile>-<sessions>-<visibility>[-parent].json and
# plans-<profile>-<sessions>.json; a table of them all: .venv/bin/python bench/profiles_table.py
# Everything the issue asks for (both sizes, send and live): bench/issue18.sh.
set -eu
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/bench}
SESSIONS=${1:-100000}
[ $# -gt 0 ] && shift
PROFILES=${*:-none today parent-10k parent-40pct agent-95pct giants}
export SECRET_KEY="${SECRET_KEY:-bench-only-$(date +%s)-not-a-deployment-key}"
export DATABASE_URL=$PG_URL
bench() {
    label=$1
    shift
    echo "-- $label ($(uptime))"
    $PY bench/http_bench.py --requests "${REQUESTS:-100}" --warmup 10 --label "$label" "$@"
}
for profile in $PROFILES; do
    echo "== $profile, $SESSIONS sessions ($(uptime))"
    $PY bench/generate.py --reset --profile "$profile" --sessions "$SESSIONS" \
        --messages-per-session "${MESSAGES_PER_SESSION:-4}" --deep-session-messages 1000500
    run="$profile-$SESSIONS"
    bench "$run-all" --visibility all
    # History and agents_list do not depend on the visibility: only the list runs again.
    for visibility in agent tree self; do
        bench "$run-$visibility" --only sessions_list --visibility "$visibility"
    done
    bench "$run-tree-parent" --only sessions_list --visibility tree \
        --requester agent:main:orchestrator
    echo "-- plans ($(uptime))"
    $PY bench/list_plans.py --label "$run"
done
