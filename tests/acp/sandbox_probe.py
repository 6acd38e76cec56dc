"""An ACP harness that tries to reach what a harness must not (tests/acp/test_acp_sandbox.py).

Standard library only, so it runs from any Python. It speaks just enough ACP (initialize,
session/new, session/prompt) and, for the prompt, a JSON object of what to try:
{"files": [paths], "dirs": [paths], "pids": [pids], "needles": [strings]}. It reads
/proc/<its parent>/environ and /proc/<pid>/environ of each pid, each file and each directory
(listing, then each entry), writes a file in its own cwd, and answers with one JSON text: for
each target the error it met, or how many bytes it read and which needles (the secrets the test
planted) were in them. It never repeats what it read: a process's environment on a test machine
may hold more than the test's own secrets.
"""

import json
import os
import sys

NEEDLES: list = []


def attempt(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 20).decode("utf-8", "replace")
    except OSError as exc:
        return {"error": type(exc).__name__}
    return {"bytes": len(data), "secrets": [n for n in NEEDLES if n in data]}


def look(task: dict) -> dict:
    NEEDLES[:] = task.get("needles", [])
    parent = os.getppid()
    found: dict = {"uid": os.getuid(), "ppid": parent, "cwd": os.getcwd()}
    found["parentEnviron"] = attempt(f"/proc/{parent}/environ")
    found["environs"] = {str(p): attempt(f"/proc/{p}/environ") for p in task.get("pids", [])}
    found["files"] = {path: attempt(path) for path in task.get("files", [])}
    dirs = {}
    for path in task.get("dirs", []):
        try:
            names = sorted(os.listdir(path))
        except OSError as exc:
            dirs[path] = {"error": type(exc).__name__}
            continue
        entries = {n: attempt(os.path.join(path, n)) for n in names}
        dirs[path] = {"listed": names, "entries": entries}
    found["dirs"] = dirs
    try:
        with open("probe-was-here.txt", "w") as f:
            f.write("the probe can write in its own cwd\n")
        found["wroteOwnCwd"] = True
    except OSError as exc:
        found["wroteOwnCwd"] = type(exc).__name__
    return found


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    method, rid = request.get("method"), request.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "probe"}})
    elif method == "session/prompt":
        text = "".join(b.get("text", "") for b in request["params"]["prompt"])
        report = json.dumps(look(json.loads(text)))
        chunk = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": report},
        }
        send(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "probe", "update": chunk},
            }
        )
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "not here"}})
