#!/bin/sh
# The read benchmarks on every data shape (issue 18), PostgreSQL only: for each profile,
# generate SESSIONS sessions, then bench/http_bench.py at visibility all and agent, and the list
# statements' plans (bench/list_plans.py).
# Usage: PG_URL=postgres://…/db bench/profiles.sh [SESSIONS] [profile …]
# Env: REQUESTS (timed requests per case, default 100), MESSAGES_PER_SESSION (default 4).
# Results: bench/results/http-postgresql-<profile>-<sessions>-<visibility>.json and
# plans-<profile>-<sessions>.json; a table of them all: .venv/bin/python bench/profiles_table.py
set -eu
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/bench}
SESSIONS=${1:-100000}
[ $# -gt 0 ] && shift
PROFILES=${*:-none today parent-10k parent-40pct agent-95pct giants}
export SECRET_KEY="${SECRET_KEY:-bench-only-$(date +%s)-not-a-deployment-key}"
export DATABASE_URL=$PG_URL
for profile in $PROFILES; do
    echo "== $profile, $SESSIONS sessions ($(uptime))"
    $PY bench/generate.py --reset --profile "$profile" --sessions "$SESSIONS" \
        --messages-per-session "${MESSAGES_PER_SESSION:-4}" --deep-session-messages 1000500
    $PY bench/http_bench.py --requests "${REQUESTS:-100}" --warmup 10 \
        --visibility all --label "$profile-$SESSIONS-all"
    # History and agents_list do not depend on the visibility: only the list runs again.
    $PY bench/http_bench.py --requests "${REQUESTS:-100}" --warmup 10 --only sessions_list \
        --visibility agent --label "$profile-$SESSIONS-agent"
    $PY bench/list_plans.py --label "$profile-$SESSIONS"
done
