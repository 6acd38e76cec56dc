"""What a run's start and finish show on its session row, through the named run-path writes:
store.append_run_input / Session.show_run_queued to start, store.finish_run_with_reply and
Run.mark_finished to end (each one UPDATE of the session)."""

import uuid

from django.db import transaction

from sessions_app import store
from sessions_app.models import Message, Run, Session
from sessions_app.runs.chain import Chain
from sessions_app.runs.engine import start_run
from tests.conftest import make_session

USAGE = {"input": 10, "output": 5, "totalTokens": 15}


def start(session: Session, message: str | None = "hello") -> Run:
    with transaction.atomic():
        return start_run(
            session=session, kind="send", message=message, chain=Chain(uuid.uuid4(), ("main",))
        )


def reply(text: str) -> list[Message]:
    return [store.read_message(0, {"role": "assistant", "content": text})]


def finish_with_reply(run: Run, text: str, usage: dict | None = None) -> bool:
    run.session.refresh_from_db()  # what the finishing transaction's lock reads
    with transaction.atomic():
        return store.finish_run_with_reply(run, reply(text), reply=text, usage=usage)


def test_a_started_run_shows_as_running_with_its_input_message(agents):
    session = make_session("main")
    run = start(session)
    session.refresh_from_db()
    assert (session.run_status, session.last_seq, run.input_seq) == ("running", 1, 1)
    assert Message.objects.get(session=session, seq=1).content == "hello"


def test_a_run_on_a_message_already_stored_shows_as_running_too(agents):
    session = make_session("main")
    store.append_to_session(session, reply("already here"))
    run = start(session, message=None)
    session.refresh_from_db()
    assert (session.run_status, session.last_seq, run.input_seq) == ("running", 1, 1)


def test_a_reply_is_appended_once_with_the_outcome_and_the_usage(agents):
    session = make_session("main")
    run = start(session)
    assert finish_with_reply(run, "hi there", USAGE)
    session.refresh_from_db()
    run.refresh_from_db()
    assert (run.status, run.reply, run.reply_seq) == (Run.OK, "hi there", 2)
    assert (session.run_status, session.last_seq, session.total_tokens) == ("done", 2, 15)
    assert not finish_with_reply(run, "again")  # finished already: nothing is written
    assert Message.objects.filter(session=session).count() == 2


def test_the_reply_of_an_aborted_run_is_discarded(agents):
    session = make_session("main")
    run = start(session)
    assert Run.objects.get(pk=run.pk).mark_finished(Run.ABORTED, error="aborted")
    assert not finish_with_reply(run, "too late")
    session.refresh_from_db()
    assert (run.status, session.run_status, session.last_seq) == (Run.ABORTED, "aborted", 1)


def test_an_older_run_finishing_late_leaves_the_newer_runs_status(agents):
    session = make_session("main")
    older, newer = start(session), start(session)
    assert older.mark_finished(Run.ERROR, error="boom", usage=USAGE)
    session.refresh_from_db()
    assert (session.run_status, session.total_tokens) == ("running", 15)
    assert newer.mark_finished(Run.OK, reply="fine")
    session.refresh_from_db()
    assert session.run_status == "done"
