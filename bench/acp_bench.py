#!/usr/bin/env python
"""ACP harness turns, cold and warm: how soon a short turn of the demo's `echo` harness starts
streaming (issue 27 item 3).

    OPENCLAW_VAR_DIR=$PWD/var/acpbench .venv/bin/python bench/acp_bench.py [--turns 20]

Drives sessions_app/acp/client.py the way acp/runtime.py does (no database: the turn's events
are only timed), in a directory of its own under the var dir, as the user the sandbox gives it
(sandbox.py; run as root, a user of its own). A turn is timed from `start()` to its first
`session/update` (the echo harness's tool call, "first update") and to its first text chunk
("first token"), and to its end.

- cold: a harness with `warmSeconds: 0`, so every turn starts a process (what every turn did
  before issue 27 item 3);
- warm, new session: after one turn to warm it up, each turn is a new ACP session in the warm
  process (a new child working in the same directory);
- warm, same session: each turn continues one ACP session (a follow-up sessions_send).

On a tree without the warm pool (`HarnessProcess` without `resume`) only `cold` is measured.
Writes bench/results/acp-<label>.json.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")

import django  # noqa: E402

django.setup()

from sessions_app.acp import client  # noqa: E402
from sessions_app.acp.harnesses import parse_harness  # noqa: E402
from sessions_app.acp.sandbox import run_as_for  # noqa: E402
from tests.acp.harness_fixtures import echo  # noqa: E402

TASK = "Say this back to me, please"


def turn(harness, cwd: str, run_as, resume: str | None = None) -> dict:
    kwargs = {"run_as": run_as}
    if resume is not None:
        kwargs["resume"] = resume
    started = time.perf_counter()
    process = client.HarnessProcess(harness, cwd=cwd, prompt=TASK, **kwargs)
    process.start()
    marks: dict = {}
    while "end" not in marks:
        for kind, data in process.next_batch(0.05):
            now = time.perf_counter() - started
            if kind == "started":
                marks["session"] = data["sessionId"]
            elif kind == "update":
                marks.setdefault("firstUpdate", now)
                if data.get("sessionUpdate") == "agent_message_chunk":
                    marks.setdefault("firstToken", now)
            elif kind in ("done", "failed"):
                marks["end"] = now
                if kind == "failed":
                    raise SystemExit(f"the turn failed: {data}")
        if time.perf_counter() - started > 60:
            raise SystemExit("a turn took over 60 s")
    process.join(10)
    return marks


def summary(samples: list[dict]) -> dict:
    out = {}
    for mark in ("firstUpdate", "firstToken", "end"):
        values = sorted(s[mark] * 1000 for s in samples)
        out[mark] = {
            "p50": round(statistics.median(values), 1),
            "p90": round(values[max(0, int(len(values) * 0.9) - 1)], 1),
            "min": round(values[0], 1),
            "max": round(values[-1], 1),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--label", default="")
    options = parser.parse_args()
    warm_pool = "resume" in inspect.signature(client.HarnessProcess).parameters
    workspace = Path(tempfile.mkdtemp(prefix="acp-bench-"))
    workspace.chmod(0o755)
    results: dict = {}

    def harness(warm_seconds: int):
        definition = echo(workspace, args=("--chunks", "1", "--delay", "0"))
        if warm_pool:
            definition["warmSeconds"] = warm_seconds
        return parse_harness("echo", definition)

    cold = harness(0)
    run_as = run_as_for(cold, str(workspace))
    results["cold"] = summary([turn(cold, str(workspace), run_as) for _ in range(options.turns)])
    if warm_pool:
        warm = harness(300)
        first = turn(warm, str(workspace), run_as)
        results["warmNewSession"] = summary(
            [turn(warm, str(workspace), run_as) for _ in range(options.turns)]
        )
        results["warmSameSession"] = summary(
            [
                turn(warm, str(workspace), run_as, resume=first["session"])
                for _ in range(options.turns)
            ]
        )
        client.POOL.shutdown()
    report = {
        "label": options.label or ("warm-pool" if warm_pool else "one-process-per-turn"),
        "turns": options.turns,
        "uid": run_as.uid,
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "results": results,
    }
    print(json.dumps(report, indent=1))
    out = ROOT / "bench" / "results" / f"acp-{report['label']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
