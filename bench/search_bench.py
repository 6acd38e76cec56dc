#!/usr/bin/env python
"""sessions_search and session_status latency on a generated data set (in process, no HTTP).

    .venv/bin/python bench/search_bench.py [--requests 200] [--warmup 20]

Uses the database the environment selects (DATABASE_URL, else SQLite under OPENCLAW_VAR_DIR),
filled by bench/generate.py. The generator's text is drawn uniformly from ~70 words, so any two
of them co-occur in a few percent of all messages: the worst case for a search. Real queries
name rarer things, so the script first appends RARE_MESSAGES messages holding the word `zephyr`
to random sessions through the app's own append (the index is written as in production;
idempotent: skipped when they exist).

Cases (each `--requests` times after `--warmup`, the tool function called directly, as every
adapter calls it; p50/p95 in ms):
1. sessions_search "zephyr deploy": a rare and a common word (a name plus a word);
2. sessions_search "database latency": two common words of bench/shapes.py's vocabulary (hundreds of thousands of matches; the
   backend reads at most search.MAX_BACKEND_HITS of them);
3. sessions_search "quasar nebula": no match;
each as an operator seeing everything (visibility all) and as agent main under `tree` (the
visibility filter in the query); then
4. session_status of the caller's session and 5. with changesSince=0 (the caller's session is
given STATE_EVENTS state events first: the generator writes none).

Prints a Markdown table; writes bench/results/search-<backend>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from sessions_app import state_log, store  # noqa: E402
from sessions_app.access.identity import requester_for  # noqa: E402
from sessions_app.models import Agent, ApiKey, GatewayConfig, Message, Session  # noqa: E402
from sessions_app.tools.session_status import session_status  # noqa: E402
from sessions_app.tools.sessions_search import sessions_search  # noqa: E402

RARE_WORD = "zephyr"
RARE_MESSAGES = 300
# The generator writes no state events; a caller's session gets this many, as a session that has
# lived a while has (status reads at most 200 of them with changesSince).
STATE_EVENTS = 1000
QUERIES = ("zephyr deploy", "database latency", "quasar nebula")


def add_rare_messages() -> None:
    if Message.objects.filter(extra__bench=RARE_WORD).exists():
        return
    rng = random.Random(7)
    top = Session.objects.order_by("-id").values_list("id", flat=True).first() or 0
    for _ in range(RARE_MESSAGES):
        session = Session.objects.filter(id__gte=rng.randint(1, top)).order_by("id").first()
        if session is None:
            continue
        text = f"please {RARE_WORD} deploy the {rng.randint(1, 99)}"
        message = store.read_message(0, {"role": "user", "content": text, "bench": RARE_WORD})
        store.append_to_session(session, [message], touch=False)


def add_state_events(keys: list[str]) -> None:
    """STATE_EVENTS run_completed events in each caller's session (idempotent)."""
    for key in keys:
        session = Session.objects.filter(key=key).first()
        if session is None:
            continue
        have = state_log.SessionEvent.objects.filter(session=session).count()
        for i in range(have, STATE_EVENTS):
            state_log.record(
                session.pk, "run_completed", actor_type="agent", summary=f"bench run {i}"
            )


def timed(call, *, requests: int, warmup: int) -> dict:
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(requests):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "p50": round(statistics.median(samples), 2),
        "p95": round(samples[int(len(samples) * 0.95) - 1], 2),
        "requests": requests,
    }


def requesters():
    config = GatewayConfig.load()
    operator = ApiKey(scope=ApiKey.OPERATOR)
    agent = ApiKey(scope=ApiKey.AGENT, agent=Agent.objects.get(pk="main"))
    config.visibility, config.a2a_enabled = "all", True
    yield "operator, visibility all", requester_for(operator, config=config)
    tree = GatewayConfig.load()
    tree.visibility = "tree"
    yield "agent main, visibility tree", requester_for(agent, config=tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    add_rare_messages()
    add_state_events([r.session_key for _, r in requesters()])
    sizes = {"sessions": Session.objects.count(), "messages": Message.objects.count()}
    rows = []
    for who, requester in requesters():
        for query in QUERIES:
            found = sessions_search(requester=requester, args={"query": query})
            stats = timed(
                lambda q=query, r=requester: sessions_search(requester=r, args={"query": q}),
                requests=args.requests,
                warmup=args.warmup,
            )
            rows.append(
                {
                    "case": f'sessions_search "{query}"',
                    "who": who,
                    "results": len(found["results"]),
                    "truncated": bool(found.get("truncated")),
                    **stats,
                }
            )
        for status_args in ({}, {"changesSince": 0}):
            stats = timed(
                lambda a=status_args, r=requester: session_status(requester=r, args=a),
                requests=args.requests,
                warmup=args.warmup,
            )
            rows.append({"case": f"session_status {json.dumps(status_args)}", "who": who, **stats})
    backend = connection.vendor
    print(f"{backend}: {sizes['sessions']:,} sessions, {sizes['messages']:,} messages\n")
    print("| case | caller | results | p50 ms | p95 ms |")
    print("|---|---|---:|---:|---:|")
    for row in rows:
        results = row.get("results", "")
        if row.get("truncated"):
            results = f"{results} (truncated)"
        print(f"| {row['case']} | {row['who']} | {results} | {row['p50']} | {row['p95']} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"search-{backend}.json").write_text(
        json.dumps(
            {
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
                "backend": backend,
                "python": platform.python_version(),
                "load": os.getloadavg(),
                **sizes,
                "rows": rows,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
