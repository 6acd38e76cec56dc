"""Running queued runs in the test process, for behaviour tests that need no real worker (tests
that cross processes start one with tests.servers)."""

from sessions_app.models import ApiKey, Run
from sessions_app.runs import webhooks
from sessions_app.runs.engine import execute_run
from tests.conftest import make_agent, make_session


def drain(max_rounds: int = 100) -> int:
    """Execute queued runs, oldest first, until none is left (follow-ups included)."""
    executed = 0
    for _ in range(max_rounds):
        queued = list(
            Run.objects.filter(status=Run.QUEUED)
            .order_by("created_at")
            .values_list("pk", flat=True)
        )
        if not queued:
            return executed
        for run_id in queued:
            execute_run(str(run_id))
            executed += 1
    raise AssertionError("runs kept coming: a loop the chain cap did not stop?")


# The send benchmark's set-up: `echo` answers a send at once; step and announce turns stay silent.
SILENT_FOLLOW_UPS = [
    {"match": ".*", "on": ["step"], "reply": "REPLY_SKIP"},
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
]
SEND_TO_ECHO = {"sessionKey": "agent:echo:main", "message": "ping", "timeoutSeconds": 30}


def completion_turns(session) -> list[Run]:
    """The session's completion turns, oldest first (withdrawn ones included)."""
    return list(Run.objects.filter(session=session, kind="completion").order_by("created_at"))


def echo_setup(main_rules: list[dict]) -> ApiKey:
    """Agents `main` (scripted by `main_rules`) and `echo` (answers "pong", silent follow-ups),
    their main sessions, and an agent key of main's."""
    make_agent("main", backend={"type": "scripted", "rules": main_rules})
    echo_rules = [*SILENT_FOLLOW_UPS, {"match": ".*", "reply": "pong"}]
    make_agent("echo", backend={"type": "scripted", "rules": echo_rules})
    make_session("main")
    make_session("agent:echo:main")
    key, _ = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
    # Which agents have a webhook is read once per process every few seconds, not per run: read
    # it now, so pinned query counts do not catch that read.
    webhooks.agents_with_webhooks()
    return key


# A sub-agent that finds something, and a parent that answers its completion turn NO_REPLY.
RESEARCH_RULES = [
    {"match": ".*", "on": ["announce"], "reply": "Nothing to add."},
    {"match": ".*", "on": ["spawn"], "reply": "Found 3 papers."},
]
PARENT_RULES = [
    {"match": ".*", "on": ["completion"], "reply": "NO_REPLY"},
    {"match": ".*", "reply": "On it."},
]


def completed_spawn(api, *, label: str = "research") -> str:
    """`main` (scripted by PARENT_RULES) spawns a `research` sub-agent labelled `label` that
    finishes; drain() runs the child and main's completion turn, so agent:main:main gets the
    real completion prompt, main's NO_REPLY and the sub-agent's report. Returns the child's key."""
    make_agent(
        "main",
        subagents={"allowAgents": ["research"]},
        backend={"type": "scripted", "rules": PARENT_RULES},
    )
    make_agent("research", backend={"type": "scripted", "rules": RESEARCH_RULES})
    details = api.details("sessions_spawn", {"agentId": "research", "task": "look", "label": label})
    assert details["status"] == "accepted", details
    drain()
    return details["childSessionKey"]
