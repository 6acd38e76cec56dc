"""Running queued runs in the test process, for behaviour tests that need no real worker (tests
that cross processes start one with tests.live)."""

from sessions_app.models import Run
from sessions_app.runs.engine import execute_run


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
