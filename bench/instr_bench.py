"""Instructions per call, counted by valgrind (callgrind): a cost measure that does not move with
the VM's speed, for before/after comparisons on a noisy machine (BENCHMARKS.md).

    .venv/bin/python bench/instr_bench.py                        # this tree
    .venv/bin/python bench/instr_bench.py --tree ../old-checkout # another checkout, same .venv

Cases (all in one process, Python side only; PostgreSQL's own work is another process):
  list   POST /tools/invoke agents_list through Django's test client (edge, tool, JSON)
  send   POST /tools/invoke sessions_send with timeoutSeconds 0 (edge, start_send, the run row)
  run    start_send + execute_run in-process (claim, scripted turn, finish, announce follow-up)
On a data set bench/generate.py made (--data DATABASE_URL; nothing is dropped, an operator key
is made and deleted, the visibility is left as it is):
  sessions_list     POST /tools/invoke sessions_list limit 200, messageLimit 5
  sessions_history  POST /tools/invoke sessions_history agent:main:main, 200, includeTools,
                    offset 1,000,000
  rest_history      GET /api/v1/sessions/agent:main:main/history/?limit=200 (first page)

Each case runs twice under callgrind, with 0 and with --calls calls after five warm-up calls; per
call = the difference / --calls. It uses its own PostgreSQL database `instrbench` (dropped and
made again) unless --database names another.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"
TARGET = "agent:echo:main"
DEEP = "agent:main:main"
DATA_CASES = ("sessions_list", "sessions_history", "rest_history")


def child(case: str, calls: int) -> None:
    """The measured process: imports the code of the current directory's tree."""
    sys.path.insert(0, os.getcwd())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openclaw_site.settings")
    import django

    django.setup()
    from django.test import Client

    try:
        from sessions_app.access.identity import requester_for
    except ImportError:  # a tree from before the layers (issue 25)
        from sessions_app.identity import requester_for  # type: ignore[no-redef]
    from sessions_app.models import ApiKey, Run
    from sessions_app.runs.engine import execute_run
    from sessions_app.tools.sessions_send import start_send

    token = os.environ["INSTR_TOKEN"]
    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Bearer {token}")
    key = ApiKey.objects.filter(scope=ApiKey.OPERATOR).first()
    requester = requester_for(key)
    bodies = {
        "list": {"tool": "agents_list"},
        "send": {
            "tool": "sessions_send",
            "args": {"sessionKey": TARGET, "message": "ping", "timeoutSeconds": 0},
        },
        "sessions_list": {"tool": "sessions_list", "args": {"limit": 200, "messageLimit": 5}},
        "sessions_history": {
            "tool": "sessions_history",
            "args": {
                "sessionKey": DEEP,
                "limit": 200,
                "includeTools": True,
                "offset": 1_000_000,
            },
        },
    }

    def call(i: int) -> None:
        if case == "rest_history":
            response = client.get(f"/api/v1/sessions/{DEEP}/history/?limit=200")
            assert response.status_code == 200 and len(response.json()["messages"]) == 200
            return
        if case == "run":
            plan = start_send(
                requester=requester,
                args={"sessionKey": TARGET, "message": f"ping {i}", "timeoutSeconds": 0},
            )
            assert plan.run_id, plan.result
            execute_run(plan.run_id)
            assert Run.objects.get(pk=plan.run_id).status == Run.OK
            return
        response = client.post("/tools/invoke", bodies[case], content_type="application/json")
        details = response.json()["result"]["details"]
        assert details.get("status") in (None, "accepted"), details
        if case in DATA_CASES:
            assert len(details.get("sessions") or details.get("messages") or []) == 200, details

    for i in range(5):
        call(i)
    for i in range(calls):
        call(i)


def prepare(database_url: str) -> str:
    """A database with a scripted `echo` agent, visibility all, and an operator key."""
    name = database_url.rsplit("/", 1)[1]
    subprocess.run(
        ["psql", f"{PG}/postgres", "-qc", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'],
        check=True,
    )
    subprocess.run(["createdb", f"--maintenance-db={PG}/postgres", name], check=True)
    env = {**os.environ, "DATABASE_URL": database_url, "DB_POOL": "0"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    script = (
        "from sessions_app.manage.agents import upsert_agent\n"
        "from sessions_app.manage.config import update_config\n"
        "from sessions_app.models import ApiKey\n"
        "from sessions_app.store import upsert_session\n"
        "upsert_agent(api_key=None, agent_id='main', data={})\n"
        "upsert_agent(api_key=None, agent_id='echo', data={'backend': {'type': 'scripted'}})\n"
        f"upsert_session(api_key=None, key='{TARGET}', entry={{}})\n"
        "update_config(api_key=None, changes={'tools.sessions.visibility': 'all',"
        " 'tools.agentToAgent.enabled': True, 'session.agentToAgent.maxPingPongTurns': 0})\n"
        "print(ApiKey.generate(scope=ApiKey.OPERATOR)[1])\n"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip().splitlines()[-1]


def count(tree: Path, case: str, calls: int, env: dict) -> int:
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            case,
            "--calls",
            str(calls),
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{case} in {tree} failed:\n{done.stderr[-3000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--cases", default="list,send,run")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--database", default=f"{PG}/instrbench")
    parser.add_argument(
        "--data", help="DATABASE_URL of a generated data set, for the sessions_* cases"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.calls)
        return
    cases = args.cases.split(",")
    if any(case in DATA_CASES for case in cases) != bool(args.data):
        parser.error(f"--data goes with the cases {', '.join(DATA_CASES)} (and only with them)")
    database = args.data or args.database
    token = data_key(database) if args.data else prepare(database)
    env = {
        **os.environ,
        "DATABASE_URL": database,
        "DB_POOL": "0",
        "PYTHONHASHSEED": "0",
        "INSTR_TOKEN": token,
    }
    try:
        for case in cases:
            base = count(args.tree, case, 0, env)
            more = count(args.tree, case, args.calls, env)
            print(f"{case}: {(more - base) / args.calls / 1e6:.2f} M instructions per call")
    finally:
        if args.data:
            manage_shell(
                database,
                "from sessions_app.models import ApiKey\n"
                "ApiKey.objects.filter(name='instr_bench').delete()\n",
            )


def manage_shell(database_url: str, script: str) -> str:
    env = {**os.environ, "DATABASE_URL": database_url, "DB_POOL": "0"}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def data_key(database_url: str) -> str:
    """An operator key on a generated data set (its schema migrated to this checkout's)."""
    env = {**os.environ, "DATABASE_URL": database_url, "DB_POOL": "0"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    script = (
        "from sessions_app.models import ApiKey\n"
        "print(ApiKey.generate(scope=ApiKey.OPERATOR, name='instr_bench')[1])\n"
    )
    return manage_shell(database_url, script).splitlines()[-1]


if __name__ == "__main__":
    main()
