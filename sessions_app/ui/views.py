"""Transcript browser views: parse the request, call sessions_app, render a template.

Pages: the session list (`/`), one transcript (`/sessions/<key>/`). Fragments the page script
fetches: rows of the list (live updates), pages of messages (older, newer, around a seq, live
appends), the side panel. Plus the JSONL download, message images, and two operator actions: the
send-policy override (the same store.set_send_policy the API's PATCH calls) and Stop (the same
runs.control.stop_session the abort endpoint, the admin and the subagents tool call).
"""

from __future__ import annotations

import base64
import binascii
import re
from functools import wraps
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from openclaw_common import keys
from openclaw_common.errors import InvalidArgument, NotFound

from .. import store
from ..acp import facts
from ..lib import charts
from ..models import Agent, GatewayConfig, Session
from ..reads.jsonl_export import jsonl_response
from ..runs import control
from ..storage import cold_storage
from . import present, queries
from .access import can_override, viewer_required
from .errors import error_page
from .forms import CHANNEL_SUGGESTIONS, ListFilterForm, parse_seq

MAX_ROW_KEYS = 50
POLICY_CHOICES = ("inherit", "allow", "deny")


def _settings() -> keys.KeySettings:
    return GatewayConfig.load().key_settings


# --- the session list -----------------------------------------------------------------------


def _rows(page: queries.ListPage, query: str = "") -> list[dict]:
    return [present.row(r, query=query) for r in page.rows]


def _list_context(form: ListFilterForm, settings: keys.KeySettings) -> dict:
    data = form.cleaned_data
    page = queries.list_page(data, settings=settings, cursor=data.get("after"))
    params = form.filter_params()
    next_url = ""
    if page.next_cursor:
        next_url = "?" + urlencode({**params, "after": str(page.next_cursor)})
    first_page = data.get("after") is None
    # The search box's message hits, above the first page of sessions.
    hits = queries.message_hits(data, settings=settings) if first_page else None
    text = (data.get("q") or "").strip()
    return {
        "rows": _rows(page, text),
        "search_text": text,
        "filter_query": urlencode(params),
        "next_url": next_url,
        "is_first_page": first_page,
        "hits": present.hits(hits, text=text) if hits is not None else None,
    }


@viewer_required
@require_GET
def session_list(request):
    form = ListFilterForm(request.GET)
    context = {
        "form": form,
        "agents": list(Agent.objects.order_by("id").values_list("id", flat=True)),
        "channels": CHANNEL_SUGGESTIONS,
        "rows": [],
        # A field named "errors" is form["errors"]; form.errors is the error dict.
        "errors_checked": bool(form["errors"].value()),
    }
    if form.is_valid():
        context["activity_range"] = form.cleaned_data["range"]
    if not form.is_valid():
        context["filter_errors"] = list(form.errors.items())
        return render(request, "ui/list.html", context, status=400)
    context.update(_list_context(form, _settings()))
    return render(request, "ui/list.html", context)


@viewer_required
@require_GET
def rows_fragment(request):
    """Rows for the live list: `key` (repeatable) → those rows if they still match the filters;
    no key → the page itself (after a reconnect)."""
    form = ListFilterForm(request.GET)
    if not form.is_valid():
        return error_page(request, 400, _form_errors(form))
    settings = _settings()
    raw_keys = request.GET.getlist("key")
    only_keys = None
    if raw_keys:
        if len(raw_keys) > MAX_ROW_KEYS:
            return error_page(request, 400, f"At most {MAX_ROW_KEYS} keys.")
        try:
            only_keys = [store.canonical_session_key(k, settings=settings) for k in raw_keys]
        except InvalidArgument as exc:
            return error_page(request, 400, str(exc))
    page = queries.list_page(
        form.cleaned_data,
        settings=settings,
        cursor=form.cleaned_data.get("after"),
        only_keys=only_keys,
    )
    text = (form.cleaned_data.get("q") or "").strip()
    return render(request, "ui/_rows.html", {"rows": _rows(page, text)})


def _form_errors(form) -> str:
    return "; ".join(
        f"{name}: {' '.join(str(e) for e in errors)}" for name, errors in form.errors.items()
    )


# --- one transcript -------------------------------------------------------------------------


def session_view(view):
    """Resolve the URL's `key` to its session (a 400 or 404 page when it is not one), make its
    transcript readable (cold_storage.ensure_hot; a 503 page when its archive is lost) and call
    `view(request, session, settings, ...)`."""

    @wraps(view)
    def wrapped(request, key: str, *args, **kwargs):
        settings = _settings()
        try:
            session = store.get_session(key, settings=settings)
        except InvalidArgument as exc:
            return error_page(request, 400, str(exc))
        except NotFound as exc:
            return error_page(request, 404, str(exc))
        try:
            cold_storage.ensure_hot(session)
        except cold_storage.TranscriptUnavailable as exc:
            return error_page(request, 503, exc.message, retry_after=exc.retry_after)
        return view(request, session, settings, *args, **kwargs)

    return wrapped


def _urls(session: Session) -> dict:
    base = present.session_url(session.key)
    return {
        "page": base,
        "messages": base + "messages/",
        "panel": base + "panel/",
        "download": base + "transcript.jsonl",
        "policy": base + "send-policy/",
        "stop": base + "stop/",
        "images": base + "images/",
    }


def _messages(page: queries.MessagePage, urls: dict) -> list[dict]:
    return present.pair_tool_calls(
        [present.message(m, image_base=urls["images"]) for m in page.messages]
    )


def _panel_context(request, session: Session, settings: keys.KeySettings, urls: dict) -> dict:
    tree = queries.subagent_tree(session)
    row = queries.session_metadata(session, tree, settings=settings)
    runs = queries.recent_runs(session)
    return {
        "session": session,
        "row": row,
        "metadata": present.metadata(row),
        "subagent": present.subagent(row),
        "tree": present.tree(tree),
        "runs": [present.run(r) for r in runs],
        "run_timeline": charts.run_timeline(runs, now=timezone.now()),
        "runs_more": len(runs) == queries.RUNS_SHOWN,
        "can_override": can_override(request.user),
        "policy_choices": POLICY_CHOICES,
        "current_policy": row.get("sendPolicy") or "inherit",
        "urls": urls,
        # An ACP child's harness, session, cwd, warm or not, permission decisions (None: not one).
        "acp": facts.page_facts(session),
    }


@viewer_required
@require_GET
@session_view
def transcript_page(request, session: Session, settings: keys.KeySettings):
    try:
        at = parse_seq(request.GET.get("at"), "at")
    except ValueError as exc:
        return error_page(request, 400, str(exc))
    if at is not None:
        page = queries.messages_around(session, at)
    else:
        page = queries.messages_before(session, None)
    urls = _urls(session)
    context = _panel_context(request, session, settings, urls)
    context.update(
        {
            "page": page,
            "msgs": _messages(page, urls),
            "title": present.title(context["row"]),
            "at": at,
        }
    )
    return render(request, "ui/transcript.html", context)


@viewer_required
@require_GET
@session_view
def messages_fragment(request, session: Session, settings: keys.KeySettings):
    """One page of messages as HTML: `before`, `after` or `around` a seq (at most one); none →
    the newest page. `limit` (≤ 200) only with `after`."""
    try:
        parsed = {
            name: parse_seq(request.GET.get(name), name, minimum=0 if name == "after" else 1)
            for name in ("before", "after", "around")
        }
        given = {name: value for name, value in parsed.items() if value is not None}
        if len(given) > 1:
            raise ValueError("give one of before, after, around")
        limit = parse_seq(request.GET.get("limit"), "limit") or queries.MESSAGE_PAGE
        if limit > queries.MAX_AFTER_PAGE or ("limit" in request.GET and "after" not in given):
            raise ValueError(f"limit must be at most {queries.MAX_AFTER_PAGE}, with after")
    except ValueError as exc:
        return error_page(request, 400, str(exc))
    if "after" in given:
        page = queries.messages_after(session, given["after"], limit=limit)
    elif "around" in given:
        page = queries.messages_around(session, given["around"])
    else:
        page = queries.messages_before(session, given.get("before"))
    urls = _urls(session)
    return render(
        request,
        "ui/_messages.html",
        {"page": page, "msgs": _messages(page, urls), "session": session},
    )


@viewer_required
@require_GET
@session_view
def panel_fragment(request, session: Session, settings: keys.KeySettings):
    return render(
        request, "ui/_panel.html", _panel_context(request, session, settings, _urls(session))
    )


def _filename(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("_")[:120] or "transcript"


@viewer_required
@require_GET
@session_view
def download(request, session: Session, settings: keys.KeySettings):
    """The transcript as OpenClaw JSONL (transcript.export_jsonl, what the API's export streams):
    credential-like text masked, or as stored with `?raw=1` for operators (users who may change
    sessions: the Operators group, superusers) only."""
    raw = request.GET.get("raw", "") in ("1", "true")
    if raw and not can_override(request.user):
        return error_page(
            request, 403, "Only operators may download a transcript unmasked (raw=1)."
        )
    return jsonl_response(request, session, raw=raw, filename=_filename(session.key))


@viewer_required
@require_GET
@session_view
def image(request, session: Session, settings: keys.KeySettings, seq: int, index: int):
    """One image block of a message, decoded (PNG, JPEG, GIF, WebP only: never markup)."""
    content = queries.message_content(session, seq)
    block = content[index] if isinstance(content, list) and index < len(content) else None
    if not isinstance(block, dict) or block.get("type") != "image":
        return error_page(request, 404, "No such image.")
    mime = present.image_mime(block)
    source = block.get("source")
    if not isinstance(source, dict):
        source = {}
    data = block.get("data") if isinstance(block.get("data"), str) else source.get("data")
    if mime not in present.IMAGE_TYPES or not isinstance(data, str):
        return error_page(request, 404, "No image data in this block.")
    try:
        body = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return error_page(request, 404, "The image data is not base64.")
    response = HttpResponse(body, content_type=mime)
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=86400"
    response["Content-Security-Policy"] = "default-src 'none'"
    return response


@viewer_required
def send_policy(request, key: str):
    """POST policy=allow|deny|inherit: the per-session override (operators and superusers)."""
    return _operator_post(request, "change the send policy") or _set_send_policy(request, key)


@session_view
def _set_send_policy(request, session: Session, settings: keys.KeySettings):
    # Stricter than store.set_send_policy (no "", no case or space variants): the form's values.
    policy = request.POST.get("policy", "")
    if policy not in POLICY_CHOICES:
        return error_page(request, 400, 'policy must be "allow", "deny" or "inherit".')
    store.set_send_policy(session=session, policy=policy)
    flash.success(request, f"Send policy for this session: {policy}.")
    return redirect(present.session_url(session.key))


def _operator_post(request, what: str) -> HttpResponse | None:
    """The refusal for a browser action operators may take, or None when this one may."""
    if request.method != "POST":
        response = error_page(request, 405, "Use the form on the transcript page.")
        response["Allow"] = "POST"
        return response
    if not can_override(request.user):
        return error_page(request, 403, f"Only operators may {what}.")
    return None


@viewer_required
def stop(request, key: str):
    """POST: stop the session's running and queued runs and every sub-agent below it."""
    return _operator_post(request, "stop a session") or _stop(request, key)


@session_view
def _stop(request, session: Session, settings: keys.KeySettings):
    stopped = control.stop_session(
        session,
        reason=f"stopped by {request.user.get_username()} (transcript browser)",
        clear_queued=True,
        cascade=True,
    )
    flash.success(
        request,
        f"Stopped: {len(stopped.aborted_run_ids)} run(s) aborted, {stopped.ended_tasks} waiting "
        f"task(s) ended, {stopped.descendants} sub-agent session(s) below.",
    )
    return redirect(present.session_url(session.key))
