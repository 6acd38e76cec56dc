"""Harness processes and the ACP sessions in them, for the worker's turns.

The worker's turn is synchronous (a django-q2 task that writes with the ORM), the ACP SDK is
asyncio: every harness process of a worker process, and the SDK's connection to it, live on one
event loop in a thread of their own (`Pool`), and everything the harness says during a turn comes
back to the worker as events on the turn's queue (`HarnessProcess.next_batch`). The ORM is never
touched here.

Warm processes: a process that ended its turn well stays up for the harness's `warmSeconds`
(idle), and serves the next turn that asks for the same harness definition, working directory,
user and environment: a follow-up to the same child continues its ACP session in it, another
child gets a new ACP session in it. A process that failed, was cancelled, or outlived its idle
time is ended; a warm one that died meanwhile is replaced by a fresh one. Without a warm one a
turn continues its ACP session with `session/load` when the harness announces `loadSession`
(what it replays is not stored again), else starts a new one and says so.

Safety, in this module:
- the process is started with only the harness's allowlisted environment (harnesses.py), in its
  own process group (a harness's own children end with it), in the checked cwd, as the user
  sandbox.py chose (a user of its own for its working directory: no reach into the worker); a
  warm process is reused only for the same definition, cwd, user and environment values;
- we offer `fs/read_text_file` and `fs/write_text_file` confined to the session's cwd (files.py),
  and no terminal: `terminal/*` (and anything else we do not announce) is answered with an error;
  a file request must name the ACP session of the turn the process is serving, and is confined to
  the cwd that turn resolved (a warm process serves one turn at a time, of any child sharing it);
- permission requests are answered at once by the harness's permissionMode, and reported;
- every stdout line must be a JSON-RPC message: anything else ends the turn with an error that
  quotes it (the SDK would log and skip it, leaving a harness that writes only garbage hanging);
- initialize, session/new and session/load must answer within startTimeoutSeconds;
- a process that is not kept warm ends with the turn: stdin closed, SIGTERM, SIGKILL to its group.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import ctypes
import hashlib
import json
import logging
import os
import queue
import re
import signal
import sys
import threading
import time
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    HttpMcpServer,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from .files import Refused, WorkingDirectory
from .harnesses import Harness, HarnessError
from .sandbox import RunAs

log = logging.getLogger("openclaw.acp")

# A harness that does not end when its stdin closes (codex-acp) outlived a worker killed or
# terminated without Python's exit hooks (the pool's atexit shutdown): the kernel ends it with
# the worker instead. Set in the child before exec, after its user is changed (a change of user
# clears it). The pool's thread, which starts every harness, lives as long as the worker.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def _end_with_the_worker() -> None:
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


CANCEL_GRACE_SECONDS = 3.0  # after session/cancel, how long the harness may take to stop
EXIT_GRACE_SECONDS = 1.0  # after stdin closes, before SIGTERM (then as long before SIGKILL)
STDOUT_LIMIT = 16 * 1024 * 1024  # one JSON-RPC line
STDERR_TAIL = 2000
READ_ONLY_KINDS = ("read", "search", "think", "fetch")
REAP_SECONDS = 1.0  # how often idle warm processes are looked at

Event = tuple[str, dict[str, Any]]

# An API key's plaintext (models.ApiKey: `ocs_<lookup>_<secret>`), as a harness with the session
# tools holds one: never let what a harness writes carry it into the worker's log.
_API_KEY = re.compile(r"ocs_[0-9a-f]{12}_[A-Za-z0-9_\-]+")


def redact(text: str) -> str:
    return _API_KEY.sub("ocs_[redacted]", text)


class HarnessFailed(Exception):
    """The harness broke the turn: it could not start, crashed, hung at start, wrote garbage."""


def decide_permission(mode: str, tool_kind: str | None, options: list[dict]) -> str | None:
    """The optionId to answer with, or None (the request is cancelled: denied).

    deny: a reject option; read-only: allow read/search/think/fetch calls, reject others;
    allow-all: an allow option."""
    allow = mode == "allow-all" or (mode == "read-only" and tool_kind in READ_ONLY_KINDS)
    wanted = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
    for kind in wanted:
        for option in options:
            if option.get("kind") == kind:
                return str(option.get("optionId"))
    return None


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


# What initialize announces: the file system (files.py), no terminal.
CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
)


def _not_offered(method: str) -> RequestError:
    return RequestError(
        -32601,
        f"{method} is not offered by this client (clientCapabilities.terminal is false)",
        {"method": method},
    )


class _Client:
    """The client side the SDK calls: session/update, session/request_permission, fs/*, handed
    to the turn the connection is serving (none between turns: what comes then is dropped, and
    a file request is refused). The terminal methods are declined (the SDK would answer them
    with `null` when missing)."""

    def __init__(self, connection: Connection):
        self.connection = connection

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        turn, files = self._files(session_id)
        try:
            text = await asyncio.to_thread(files.read_text, path, line=line, limit=limit)
        except Refused as exc:
            raise _refuse(turn, "fs/read_text_file", path, exc) from None
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        turn, files = self._files(session_id)
        try:
            await asyncio.to_thread(files.write_text, path, content)
        except Refused as exc:
            raise _refuse(turn, "fs/write_text_file", path, exc) from None
        return WriteTextFileResponse()

    async def create_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise _not_offered("terminal/create")

    async def terminal_output(self, *args: Any, **kwargs: Any) -> Any:
        raise _not_offered("terminal/output")

    async def release_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise _not_offered("terminal/release")

    async def wait_for_terminal_exit(self, *args: Any, **kwargs: Any) -> Any:
        raise _not_offered("terminal/wait_for_exit")

    async def kill_terminal(self, *args: Any, **kwargs: Any) -> Any:
        raise _not_offered("terminal/kill")

    def _files(self, session_id: str) -> tuple[HarnessProcess, WorkingDirectory]:
        """The turn this request belongs to and its directory. A warm process holds the ACP
        sessions of every child that shared it, but serves one turn at a time: only that turn's
        session may use the file system, confined to the cwd that turn resolved."""
        turn = self.connection.turn
        if turn is None or turn.files is None or session_id != turn.session_id:
            raise RequestError(-32602, f"session {session_id!r} has no turn running", None)
        return turn, turn.files

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        turn = self.connection.turn
        if turn is not None and not turn.replaying:
            turn.events.put(("update", _dump(update)))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        call = _dump(tool_call)
        offered = [_dump(o) for o in options]
        mode = self.connection.harness.permission_mode
        turn = self.connection.turn
        chosen = decide_permission(mode, call.get("kind"), offered) if turn else None
        allowed = chosen is not None and any(
            o.get("optionId") == chosen and str(o.get("kind", "")).startswith("allow")
            for o in offered
        )
        if turn is not None:
            turn.events.put(
                (
                    "permission",
                    {
                        "mode": mode,
                        "allowed": allowed,
                        "optionId": chosen,
                        "toolCall": call,
                        "options": offered,
                    },
                )
            )
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )


def _refuse(turn: HarnessProcess, method: str, path: str, exc: Refused) -> RequestError:
    """The harness hears why; the transcript records it (a harness reaching out of its cwd is
    worth seeing)."""
    turn.events.put(("refused", {"method": method, "path": path, "reason": str(exc)}))
    return RequestError(-32602, str(exc), {"path": path})


def pool_key(harness: Harness, cwd: str, run_as: RunAs) -> str:
    """What a warm process must match to serve a turn: the definition, the cwd, the user and
    the environment's values (a changed allowlist or a rotated key gets a new process)."""
    material = json.dumps(
        [harness.as_json(), cwd, run_as.uid, sorted(harness.environment().items())],
        sort_keys=True,
    )
    return hashlib.sha256(material.encode()).hexdigest()


class Connection:
    """One harness process, initialized, and the ACP sessions created in it (on the pool loop)."""

    def __init__(self, harness: Harness, cwd: str, run_as: RunAs, key: str):
        self.harness = harness
        self.cwd = cwd
        self.run_as = run_as
        self.key = key
        self.turn: HarnessProcess | None = None
        self.sessions: set[str] = set()
        self.load_session = False
        self.mcp_http = False  # it announced mcpCapabilities.http: it takes our MCP server
        self.idle_since = time.monotonic()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=50)
        self.garbage: str | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.conn: Any = None
        self._pumps: list[asyncio.Task] = []

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None and self.garbage is None

    async def open(self) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                self.harness.executable(),
                *self.harness.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.harness.environment(),
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=_end_with_the_worker,
                limit=STDOUT_LIMIT,
                **self.run_as.popen_kwargs(),
            )
        except OSError as exc:
            raise HarnessFailed(f"the harness could not be started: {exc}") from None
        except HarnessError as exc:  # its command is gone from the PATH since the spawn
            raise HarnessFailed(exc.message) from None
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        reader = asyncio.StreamReader(limit=STDOUT_LIMIT)
        self._pumps = [
            asyncio.create_task(self._pump_stdout(proc, reader)),
            asyncio.create_task(self._pump_stderr(proc.stderr)),
        ]
        self.conn = connect_to_agent(_Client(self), proc.stdin, reader)  # type: ignore[arg-type]
        response = await self.starting(
            self.conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=CAPABILITIES,
                client_info=Implementation(name="openclaw-sessions", version="1"),
            )
        )
        capabilities = getattr(response, "agent_capabilities", None)
        self.load_session = bool(getattr(capabilities, "load_session", False))
        mcp = getattr(capabilities, "mcp_capabilities", None)
        self.mcp_http = bool(getattr(mcp, "http", False))

    async def starting(self, call: Any) -> Any:
        """A start-up request (initialize, session/new, session/load) within startTimeoutSeconds."""
        timeout = self.harness.start_timeout
        try:
            return await asyncio.wait_for(call, timeout)
        except TimeoutError:
            raise HarnessFailed(
                f"the harness did not answer initialize/session/new within {timeout}s "
                "(startTimeoutSeconds)" + self.stderr_note()
            ) from None

    async def _pump_stdout(self, proc: asyncio.subprocess.Process, reader: asyncio.StreamReader):
        """Pass JSON-RPC lines to the SDK; anything else ends the turn (see the module doc)."""
        assert proc.stdout is not None
        try:
            while True:
                try:
                    line = await proc.stdout.readline()
                except ValueError:  # a line past STDOUT_LIMIT
                    self.garbage = f"a line longer than {STDOUT_LIMIT} bytes"
                    break
                if not line:
                    break
                text = line.strip()
                if not text:
                    continue
                try:
                    message = json.loads(text)
                except ValueError:
                    message = None
                if not isinstance(message, dict):
                    # What it said goes to the log only: run errors are read by every reader
                    # of the session, and a harness's output may hold anything.
                    log.warning(
                        "ACP harness pid %s wrote non-JSON-RPC: %r",
                        proc.pid,
                        redact(text[:200].decode("utf-8", "replace")),
                    )
                    self.garbage = f"a line of {len(text)} bytes"
                    break
                reader.feed_data(text + b"\n")
        finally:
            reader.feed_eof()
            if self.garbage is not None:
                _signal(proc, signal.SIGKILL)

    async def _pump_stderr(self, stderr: asyncio.StreamReader) -> None:
        while line := await stderr.readline():
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())

    async def explain(self, exc: Exception) -> str:
        proc = self.proc
        if self.garbage is not None:
            return f"the harness wrote something that is not ACP JSON-RPC on stdout: {self.garbage}"
        if isinstance(exc, ConnectionError) and proc is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), 2)
            code = proc.returncode
            ended = f"exited with code {code}" if code is not None else "closed its stdout"
            return f"the harness {ended} during the turn{self.stderr_note()}"
        if isinstance(exc, RequestError):
            log.warning("ACP harness pid %s answered with an error: %s", self.pid, redact(str(exc)))
            return "the harness answered with an error" + self.stderr_note()
        log.warning(
            "ACP harness pid %s sent an invalid ACP message: %s", self.pid, redact(str(exc))
        )
        return "the harness sent an invalid ACP message (the worker's log has it)"

    def stderr_note(self) -> str:
        """Where the harness's stderr went: the worker's log, never the run's error, which
        every reader of the session sees (a traceback may hold a password or a token)."""
        tail = "\n".join(self.stderr_tail)[-STDERR_TAIL:].strip()
        if not tail:
            return ""
        log.warning("ACP harness stderr (last %d chars):\n%s", STDERR_TAIL, redact(tail))
        return "; its stderr is in the worker's log"

    def kill(self) -> None:
        if self.proc is not None:
            _signal(self.proc, signal.SIGKILL)

    async def close(self) -> None:
        """Close stdin, then SIGTERM, then SIGKILL the process group."""
        proc = self.proc
        if proc is not None:
            if proc.stdin is not None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    await asyncio.wait_for(proc.wait(), EXIT_GRACE_SECONDS)
                    break
                except TimeoutError:
                    _signal(proc, sig)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), EXIT_GRACE_SECONDS)
            # Whatever the harness started and left behind in its group goes too.
            _signal(proc, signal.SIGKILL)
        for pump in self._pumps:
            pump.cancel()
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await self.conn.close()


def _signal(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


class Pool:
    """The worker process's harness processes: one event loop thread, warm ones by key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: dict[str, list[Connection]] = {}

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(
                    target=self._main, args=(loop, ready), daemon=True, name="acp-pool"
                )
                thread.start()
                ready.wait(5)
                self._loop = loop
            return self._loop

    def _main(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.create_task(self._reap())
        loop.run_forever()

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(REAP_SECONDS)
            now = time.monotonic()
            for key, connections in list(self._idle.items()):
                for connection in list(connections):
                    expired = now - connection.idle_since > connection.harness.warm_seconds
                    if expired or not connection.alive():
                        connections.remove(connection)
                        await connection.close()
                if not connections:
                    self._idle.pop(key, None)

    # On the loop:

    def take(self, key: str) -> Connection | None:
        """A warm process for `key`; dead ones met on the way are ended (replaced by the caller)."""
        connections = self._idle.get(key) or []
        while connections:
            connection = connections.pop()
            if connection.alive():
                return connection
            asyncio.get_running_loop().create_task(connection.close())
        return None

    def keep(self, connection: Connection) -> None:
        connection.turn = None
        connection.idle_since = time.monotonic()
        self._idle.setdefault(connection.key, []).append(connection)

    def warm(self) -> list[Connection]:
        return [c for connections in self._idle.values() for c in connections]

    # From any thread:

    def shutdown(self, timeout: float = 10) -> None:
        """End every warm process (tests; the worker's exit)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        async def close_all() -> None:
            connections = self.warm()
            self._idle.clear()
            await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close_all(), loop).result(timeout)

    def warm_pids(self) -> list[int]:
        return [c.pid for c in self.warm() if c.pid is not None]


POOL = Pool()
atexit.register(POOL.shutdown)


class HarnessProcess:
    """One turn: a harness process (warm or new), an ACP session in it (continued, loaded or
    new), one prompt. The worker's side is synchronous (start, next_batch, request_cancel,
    join); the turn runs on the pool's loop."""

    def __init__(
        self,
        harness: Harness,
        *,
        cwd: str,
        prompt: str,
        run_as: RunAs | None = None,
        resume: str | None = None,
        mcp_server: HttpMcpServer | None = None,
        mcp_note: dict[str, Any] | None = None,
        pool: Pool = POOL,
    ):
        """`mcp_server`: this service's MCP server for the turn's ACP session, with the turn's
        key (session_tools.py); `mcp_note`: what the start message's `acp` says of the session
        tools (no secret): `sessionTools` when handed over, `sessionToolsNote` when not."""
        self.harness = harness
        self.cwd = cwd
        self.prompt = prompt
        self.run_as = run_as or RunAs(None)
        self.resume = resume or None
        self.mcp_server = mcp_server
        self.mcp_note = mcp_note or {}
        self.pool = pool
        self.events: queue.Queue[Event] = queue.Queue()
        self.replaying = False
        self.session_id: str | None = None  # the ACP session of this turn, once opened
        self.files: WorkingDirectory | None = None  # the cwd as this turn began (files.py)
        # Once the turn is over (join): its process, and whether the pool kept it warm.
        self.pid: int | None = None
        self.kept_warm = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel: asyncio.Event | None = None
        self._connection: Connection | None = None
        self._started = False
        self._future: concurrent.futures.Future | None = None

    # --- the worker's side (sync) ---------------------------------------------------------

    def start(self) -> None:
        self._loop = self.pool.loop()
        self._future = asyncio.run_coroutine_threadsafe(self._main(), self._loop)

    def request_cancel(self) -> None:
        """session/cancel, then the process ends (the turn's events keep coming meanwhile)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop just ended
                loop.call_soon_threadsafe(self._on_cancel)

    def next_batch(self, timeout: float) -> list[Event]:
        """The events that came in, waiting up to `timeout` for the first."""
        try:
            batch = [self.events.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                batch.append(self.events.get_nowait())
            except queue.Empty:
                return batch

    def join(self, timeout: float) -> bool:
        if self._future is None:
            return True
        with contextlib.suppress(concurrent.futures.TimeoutError, Exception):
            self._future.result(timeout)
        return self._future.done()

    # --- the loop's side --------------------------------------------------------------------

    def _on_cancel(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
        if not self._started and self._connection is not None:
            # No session to cancel yet (a harness hanging at start): just end it.
            self._connection.kill()

    async def _main(self) -> None:
        try:
            await self._run()
        except HarnessFailed as exc:
            self.events.put(("failed", {"error": str(exc)}))
        except Exception as exc:  # a bug here must still end the turn, and say so
            log.exception("ACP harness %s failed", self.harness.id)
            self.events.put(("failed", {"error": f"{type(exc).__name__}: {exc}"}))

    async def _run(self) -> None:
        self._cancel = asyncio.Event()
        try:
            # The cwd as the turn starts: the file system this turn serves stays this directory;
            # what it writes belongs to the harness's user, who may change it later (sandbox.py).
            self.files = WorkingDirectory(self.cwd, owner=self.run_as.uid)
        except OSError as exc:
            raise HarnessFailed(f"the working directory cannot be used: {exc.strerror}") from None
        key = pool_key(self.harness, self.cwd, self.run_as)
        connection = self.pool.take(key)
        warm = connection is not None
        if connection is None:
            connection = Connection(self.harness, self.cwd, self.run_as, key)
        connection.turn = self
        self._connection = connection
        keep = False
        try:
            if not warm:
                await connection.open()
            keep = await self._session(connection, warm=warm)
        except (ConnectionError, RequestError, ValueError) as exc:
            raise HarnessFailed(await connection.explain(exc)) from None
        finally:
            connection.turn = None
            self.pid = connection.pid
            if keep and connection.alive() and self.harness.warm_seconds > 0:
                self.pool.keep(connection)
                self.kept_warm = True
            else:
                await connection.close()

    def _mcp_servers(self, connection: Connection) -> tuple[list[HttpMcpServer], dict[str, Any]]:
        """What session/new or session/load hands the harness, and what the start message says
        of it: our MCP server when the turn has one and the harness takes MCP over HTTP."""
        if self.mcp_server is None:
            return [], dict(self.mcp_note)  # off, or why they could not be offered
        if not connection.mcp_http:
            return [], {
                "sessionToolsNote": "The session tools were not offered: the harness does not "
                "announce MCP over HTTP (mcpCapabilities.http)."
            }
        return [self.mcp_server], dict(self.mcp_note)

    async def _open_session(self, connection: Connection) -> tuple[str, dict[str, Any]]:
        """The ACP session of this turn, and how it was reached (for the start message)."""
        conn = connection.conn
        wanted = self.resume
        servers, tools = self._mcp_servers(connection)
        # A warm session with the session tools is loaded again in its process (below), to
        # hand it this turn's key: its MCP server has the key of the turn that opened it.
        if wanted and wanted in connection.sessions and not (servers and connection.load_session):
            if servers:
                tools = {
                    "sessionToolsNote": "The session tools are not available in this turn: the "
                    "warm ACP session holds the key of the turn that opened it, revoked when "
                    "that turn ended, and the harness does not announce loadSession to be "
                    "handed this turn's."
                }
            return wanted, {"resumed": "warm", **tools}
        if wanted and connection.load_session:
            self.replaying = True  # what it replays is in the transcript already
            try:
                await connection.starting(
                    conn.load_session(cwd=self.cwd, session_id=wanted, mcp_servers=servers)
                )
            except RequestError as exc:
                log.warning("ACP harness pid %s could not load %s: %s", connection.pid, wanted, exc)
            else:
                connection.sessions.add(wanted)
                return wanted, {"resumed": "load", **tools}
            finally:
                self.replaying = False
        session = await connection.starting(conn.new_session(cwd=self.cwd, mcp_servers=servers))
        connection.sessions.add(session.session_id)
        if not wanted:
            return session.session_id, tools
        why = (
            "it could not load it"
            if connection.load_session
            else "its process has ended and it does not announce loadSession"
        )
        return session.session_id, {"notContinued": wanted, "why": why, **tools}

    async def _session(self, connection: Connection, *, warm: bool) -> bool:
        """The turn; True when it ended well enough for the process to stay warm."""
        proc = connection.proc
        assert proc is not None
        session_id, how = await self._open_session(connection)
        self.session_id = session_id
        self._started = True
        started: dict[str, Any] = {
            "sessionId": session_id,
            "cwd": self.cwd,
            "pid": proc.pid,
            "warm": warm,
            **how,
        }
        if self.run_as.uid is not None:
            started["uid"] = self.run_as.uid
        if self.run_as.note:
            started["sandboxNote"] = self.run_as.note
        self.events.put(("started", started))
        prompt = asyncio.create_task(
            connection.conn.prompt(session_id=session_id, prompt=[text_block(self.prompt)])
        )
        assert self._cancel is not None
        cancelled = asyncio.create_task(self._cancel.wait())
        await asyncio.wait({prompt, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        if not prompt.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.conn.cancel(session_id=session_id), 1)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(prompt), CANCEL_GRACE_SECONDS)
            if not prompt.done():
                prompt.cancel()
            self.events.put(("done", {"stopReason": "cancelled", "byUs": True}))
            return False
        cancelled.cancel()
        response = prompt.result()  # raises what the request raised
        self.events.put(("done", {"stopReason": response.stop_reason}))
        return response.stop_reason in ("end_turn", "max_tokens", "max_turn_requests")
