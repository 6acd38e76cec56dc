#!/bin/sh
# Generate the data set and run the HTTP benchmark on SQLite and PostgreSQL (bench/README.md).
# Usage: bench/run.sh [generate|http|all] ; PG_URL overrides the PostgreSQL database.
set -eu
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/bench}
SQLITE_DIR=${SQLITE_DIR:-$(pwd)/var/bench}
what=${1:-all}
# Production mode (a PostgreSQL DATABASE_URL) needs a SECRET_KEY; a benchmark's is throwaway.
export SECRET_KEY="${SECRET_KEY:-bench-only-$(date +%s)-not-a-deployment-key}"

if [ "$what" = generate ] || [ "$what" = all ]; then
    psql "${PG_URL%/*}/postgres" -Atc "SELECT 1 FROM pg_database WHERE datname = '${PG_URL##*/}'" \
        | grep -q 1 || createdb --maintenance-db="${PG_URL%/*}/postgres" "${PG_URL##*/}"
    DATABASE_URL=$PG_URL $PY bench/generate.py --reset
    OPENCLAW_VAR_DIR=$SQLITE_DIR $PY bench/generate.py --reset
fi
if [ "$what" = http ] || [ "$what" = all ]; then
    DATABASE_URL=$PG_URL $PY bench/http_bench.py
    OPENCLAW_VAR_DIR=$SQLITE_DIR $PY bench/http_bench.py
fi
