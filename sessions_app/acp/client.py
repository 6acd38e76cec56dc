"""One harness process and one ACP session in it, for one turn, driven from a worker thread.

The worker's turn is synchronous (a django-q2 task that writes with the ORM), the ACP SDK is
asyncio: the process and the SDK's `ClientSideConnection` live on an event loop in a thread of
their own, and everything the harness says comes back to the worker as events on a queue
(`next_batch`). The ORM is never touched here.

Safety, in this module:
- the process is started with only the harness's allowlisted environment (harnesses.py), in its
  own process group (a harness's own children end with it), in the checked cwd, as the user
  sandbox.py chose (a user of its own for its working directory: no reach into the worker);
- we offer `fs/read_text_file` and `fs/write_text_file` confined to the session's cwd (files.py),
  and no terminal: `terminal/*` (and anything else we do not announce) is answered with an error;
- permission requests are answered at once by the harness's permissionMode, and reported;
- every stdout line must be a JSON-RPC message: anything else ends the turn with an error that
  quotes it (the SDK would log and skip it, leaving a harness that writes only garbage hanging);
- initialize and session/new must answer within startTimeoutSeconds;
- the process always ends with the turn: stdin closed, then SIGTERM, then SIGKILL to its group.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import queue
import signal
import threading
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from .files import Refused, WorkingDirectory
from .harnesses import Harness, HarnessError
from .sandbox import RunAs

log = logging.getLogger("openclaw.acp")

CANCEL_GRACE_SECONDS = 3.0  # after session/cancel, how long the harness may take to stop
EXIT_GRACE_SECONDS = 1.0  # after stdin closes, before SIGTERM (then as long before SIGKILL)
STDOUT_LIMIT = 16 * 1024 * 1024  # one JSON-RPC line
STDERR_TAIL = 2000
READ_ONLY_KINDS = ("read", "search", "think", "fetch")

Event = tuple[str, dict[str, Any]]


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
    """The client side the SDK calls: session/update, session/request_permission, fs/*. The
    terminal methods are declined (the SDK would answer them with `null` when missing)."""

    def __init__(self, process: HarnessProcess, files: WorkingDirectory):
        self.process = process
        self.files = files

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self._check_session(session_id)
        try:
            text = await asyncio.to_thread(self.files.read_text, path, line=line, limit=limit)
        except Refused as exc:
            raise self._refuse("fs/read_text_file", path, exc) from None
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self._check_session(session_id)
        try:
            await asyncio.to_thread(self.files.write_text, path, content)
        except Refused as exc:
            raise self._refuse("fs/write_text_file", path, exc) from None
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

    def _check_session(self, session_id: str) -> None:
        known = self.process.session_id
        if known is not None and session_id != known:
            raise RequestError(-32602, f"unknown session {session_id!r}", None)

    def _refuse(self, method: str, path: str, exc: Refused) -> RequestError:
        """The harness hears why; the transcript records it (a harness reaching out of its
        cwd is worth seeing)."""
        self.process.events.put(("refused", {"method": method, "path": path, "reason": str(exc)}))
        return RequestError(-32602, str(exc), {"path": path})

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.process.events.put(("update", _dump(update)))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        call = _dump(tool_call)
        offered = [_dump(o) for o in options]
        mode = self.process.harness.permission_mode
        chosen = decide_permission(mode, call.get("kind"), offered)
        allowed = chosen is not None and any(
            o.get("optionId") == chosen and str(o.get("kind", "")).startswith("allow")
            for o in offered
        )
        self.process.events.put(
            (
                "permission",
                {"mode": mode, "allowed": allowed, "optionId": chosen, "toolCall": call},
            )
        )
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )


class HarnessProcess:
    def __init__(self, harness: Harness, *, cwd: str, prompt: str, run_as: RunAs | None = None):
        self.harness = harness
        self.cwd = cwd
        self.run_as = run_as or RunAs(None)
        self.prompt = prompt
        self.events: queue.Queue[Event] = queue.Queue()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=50)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel: asyncio.Event | None = None
        self._ready = threading.Event()
        self._garbage: str | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._started = False
        self.session_id: str | None = None
        self._thread = threading.Thread(target=self._main, daemon=True, name=f"acp-{harness.id}")

    # --- the worker's side (sync) ---------------------------------------------------------

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(5)

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
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # --- the loop's side --------------------------------------------------------------------

    def _on_cancel(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
        if not self._started and self._proc is not None:
            # No session to cancel yet (a harness hanging at start): just end it.
            self._signal(self._proc, signal.SIGKILL)

    def _main(self) -> None:
        try:
            asyncio.run(self._run())
        except HarnessFailed as exc:
            self.events.put(("failed", {"error": str(exc)}))
        except Exception as exc:  # a bug here must still end the turn, and say so
            log.exception("ACP harness %s failed", self.harness.id)
            self.events.put(("failed", {"error": f"{type(exc).__name__}: {exc}"}))
        finally:
            self._ready.set()

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._cancel = asyncio.Event()
        self._ready.set()
        try:
            # The cwd as the turn starts: the file system we serve stays this directory.
            files = WorkingDirectory(self.cwd)
        except OSError as exc:
            raise HarnessFailed(f"the working directory cannot be used: {exc.strerror}") from None
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
                limit=STDOUT_LIMIT,
                **self.run_as.popen_kwargs(),
            )
        except OSError as exc:
            raise HarnessFailed(f"the harness could not be started: {exc}") from None
        except HarnessError as exc:  # its command is gone from the PATH since the spawn
            raise HarnessFailed(exc.message) from None
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self._proc = proc
        reader = asyncio.StreamReader(limit=STDOUT_LIMIT)
        pumps = [
            asyncio.create_task(self._pump_stdout(proc, reader)),
            asyncio.create_task(self._pump_stderr(proc.stderr)),
        ]
        conn = connect_to_agent(_Client(self, files), proc.stdin, reader)  # type: ignore[arg-type]
        try:
            await self._session(conn, proc)
        except (ConnectionError, RequestError, ValueError) as exc:
            raise HarnessFailed(await self._explain(exc, proc)) from None
        finally:
            await self._end(proc)
            for pump in pumps:
                pump.cancel()
            with contextlib.suppress(Exception):
                await conn.close()

    async def _session(self, conn: Any, proc: asyncio.subprocess.Process) -> None:
        timeout = self.harness.start_timeout
        try:
            await asyncio.wait_for(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=CAPABILITIES,
                    client_info=Implementation(name="openclaw-sessions", version="1"),
                ),
                timeout,
            )
            session = await asyncio.wait_for(
                conn.new_session(cwd=self.cwd, mcp_servers=[]), timeout
            )
        except TimeoutError:
            raise HarnessFailed(
                f"the harness did not answer initialize/session/new within {timeout}s "
                "(startTimeoutSeconds)" + self._stderr_note()
            ) from None
        session_id = self.session_id = session.session_id
        self._started = True
        started = {"sessionId": session_id, "cwd": self.cwd, "pid": proc.pid}
        if self.run_as.uid is not None:
            started["uid"] = self.run_as.uid
        if self.run_as.note:
            started["sandboxNote"] = self.run_as.note
        self.events.put(("started", started))
        prompt = asyncio.create_task(
            conn.prompt(session_id=session_id, prompt=[text_block(self.prompt)])
        )
        assert self._cancel is not None
        cancelled = asyncio.create_task(self._cancel.wait())
        await asyncio.wait({prompt, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        if not prompt.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.cancel(session_id=session_id), 1)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(prompt), CANCEL_GRACE_SECONDS)
            if not prompt.done():
                prompt.cancel()
            self.events.put(("done", {"stopReason": "cancelled", "byUs": True}))
            return
        cancelled.cancel()
        response = prompt.result()  # raises what the request raised
        self.events.put(("done", {"stopReason": response.stop_reason}))

    async def _pump_stdout(self, proc: asyncio.subprocess.Process, reader: asyncio.StreamReader):
        """Pass JSON-RPC lines to the SDK; anything else ends the turn (see the module doc)."""
        assert proc.stdout is not None
        try:
            while True:
                try:
                    line = await proc.stdout.readline()
                except ValueError:  # a line past STDOUT_LIMIT
                    self._garbage = f"a line longer than {STDOUT_LIMIT} bytes"
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
                    log.warning("ACP harness pid %s wrote non-JSON-RPC: %r", proc.pid, text[:200])
                    self._garbage = f"a line of {len(text)} bytes"
                    break
                reader.feed_data(text + b"\n")
        finally:
            reader.feed_eof()
            if self._garbage is not None:
                self._signal(proc, signal.SIGKILL)

    async def _pump_stderr(self, stderr: asyncio.StreamReader) -> None:
        while line := await stderr.readline():
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())

    async def _explain(self, exc: Exception, proc: asyncio.subprocess.Process) -> str:
        if self._garbage is not None:
            return (
                f"the harness wrote something that is not ACP JSON-RPC on stdout: {self._garbage}"
            )
        if isinstance(exc, ConnectionError):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), 2)
            code = proc.returncode
            ended = f"exited with code {code}" if code is not None else "closed its stdout"
            return f"the harness {ended} during the turn{self._stderr_note()}"
        if isinstance(exc, RequestError):
            log.warning("ACP harness pid %s answered with an error: %s", proc.pid, exc)
            return "the harness answered with an error" + self._stderr_note()
        log.warning("ACP harness pid %s sent an invalid ACP message: %s", proc.pid, exc)
        return "the harness sent an invalid ACP message (the worker's log has it)"

    def _stderr_note(self) -> str:
        """Where the harness's stderr went: the worker's log, never the run's error, which
        every reader of the session sees (a traceback may hold a password or a token)."""
        tail = "\n".join(self.stderr_tail)[-STDERR_TAIL:].strip()
        if not tail:
            return ""
        log.warning("ACP harness stderr (last %d chars):\n%s", STDERR_TAIL, tail)
        return "; its stderr is in the worker's log"

    async def _end(self, proc: asyncio.subprocess.Process) -> None:
        """Close stdin, then SIGTERM, then SIGKILL the process group."""
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                await asyncio.wait_for(proc.wait(), EXIT_GRACE_SECONDS)
                break
            except TimeoutError:
                self._signal(proc, sig)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), EXIT_GRACE_SECONDS)
        # Whatever the harness started and left behind in its group goes too.
        self._signal(proc, signal.SIGKILL)

    @staticmethod
    def _signal(proc: asyncio.subprocess.Process, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
