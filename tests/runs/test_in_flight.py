"""Run.objects.in_flight(): the runs not finished yet (queued or running), what the sweep and
the spawn limit count."""

from sessions_app.models import Run
from tests.conftest import make_session


def test_queued_and_running_runs_are_in_flight_finished_ones_are_not(agents):
    session = make_session("main")
    runs = {
        status: Run.objects.create(session=session, status=status) for status, _ in Run.STATUSES
    }
    in_flight = set(Run.objects.in_flight().values_list("pk", flat=True))
    assert in_flight == {runs[Run.QUEUED].pk, runs[Run.RUNNING].pk}
