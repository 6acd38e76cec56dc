"""The operator console. A thin adapter (STYLE.md rule 1): every write goes through the function
the API uses — store.set_send_policy, Session.archive/restore, engine.abort_run,
agents.upsert_agent, config.update_config, ApiKey.generate/revoke. List actions and change-page
buttons share their shapes (actions.py); one-row pages theirs (singleton.py).

Session data, transcripts and runs are read-only here: the change pages show them and offer
actions, never a save. Messages are not registered at all, so they cannot be edited or deleted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from openclaw_common.errors import InvalidArgument

from .. import store, transcript
from ..acp import facts
from ..lib import when
from ..manage import config
from ..manage.agents import upsert_agent
from ..models import Agent, ApiKey, GatewayConfig, Message, Run, Session
from ..reads import internal_rows, jsonl_export
from ..reads.session_names import name_of_session
from ..runs import control, engine
from ..runs import model_catalog as catalog
from ..runs.backends import TurnInput, get_backend
from ..storage import cold_storage
from .actions import (
    ActionsNeedChangeMixin,
    ModelAdminMixin,
    RowAction,
    RowActionsMixin,
    each_row_action,
)
from .forms import AgentForm, ApiKeyCreateForm, GatewayConfigForm
from .retention import retention_view
from .singleton import SingletonAdminMixin

# Change pages that only show data: no Save buttons.
READ_ONLY_PAGE = {
    "show_save": False,
    "show_save_and_continue": False,
    "show_save_and_add_another": False,
    "show_delete": False,
}


def ms_to_datetime(ms: int | None) -> datetime | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


class ReadOnlyChangePageMixin(ModelAdminMixin):
    """A change page that only shows its row: no Save buttons, and a POST to it is refused."""

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if request.method == "POST":
            # Nothing on these pages is saved; actions have their own URLs.
            raise PermissionDenied
        return super().change_view(
            request, object_id, form_url, {**READ_ONLY_PAGE, **(extra_context or {})}
        )


class ReadOnlyModelAdmin(
    ReadOnlyChangePageMixin, RowActionsMixin, ActionsNeedChangeMixin, admin.ModelAdmin
):
    """Every model field read-only; no add, no delete. Change permission only gates actions."""

    def get_readonly_fields(self, request, obj=None):
        own = [f.name for f in self.model._meta.fields]
        return [*own, *self.readonly_fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# --- Sessions -------------------------------------------------------------------------------


class ChoicesFilter(admin.SimpleListFilter):
    """A list filter given as `options`: {value in the URL: (label, narrow(queryset))}."""

    options: dict[str, tuple[str, Callable]] = {}

    def lookups(self, request, model_admin):
        return [(value, label) for value, (label, _) in self.options.items()]

    def queryset(self, request, queryset):
        value = self.value()
        option = self.options.get(value) if value is not None else None
        return option[1](queryset) if option else queryset


def _active_within(minutes: int) -> Callable:
    def narrow(sessions):
        since = timezone.now() - timedelta(minutes=minutes)
        return sessions.filter(updated_at__gte=int(since.timestamp() * 1000))

    return narrow


class ArchivedFilter(ChoicesFilter):
    title = "archived"
    parameter_name = "archived"
    options = {
        "yes": ("archived", lambda sessions: sessions.archived()),
        "no": ("active", lambda sessions: sessions.active()),
    }


class ActiveWithinFilter(ChoicesFilter):
    title = "active in the last"
    parameter_name = "active_minutes"
    options = {
        "5": ("5 minutes", _active_within(5)),
        "60": ("hour", _active_within(60)),
        "1440": ("day", _active_within(1440)),
    }


class SendPolicyFilter(ChoicesFilter):
    title = "send policy"
    parameter_name = "send_policy"
    options = {
        "allow": ("allow", lambda sessions: sessions.filter(send_policy="allow")),
        "deny": ("deny", lambda sessions: sessions.filter(send_policy="deny")),
        "inherit": ("inherit", lambda sessions: sessions.filter(send_policy="")),
    }


def _set_policy_action(policy: str):
    return each_row_action(
        f"set_send_policy_{policy}",
        f"Set send policy: {policy}",
        lambda session: store.set_send_policy(session=session, policy=policy),
        f"Send policy set to {policy} on {{count}} session(s).",
    )


@admin.register(Session)
class SessionAdmin(ReadOnlyModelAdmin):
    list_display = [
        "key",
        "title",
        "kind_shown",
        "channel_shown",
        "agent",
        "updated",
        "is_archived",
        "send_policy_display",
        "run_status",
    ]
    list_filter = [
        "kind",
        "row_channel",
        "agent",
        ArchivedFilter,
        ActiveWithinFilter,
        SendPolicyFilter,
    ]
    search_fields = ["key", "label", "display_name", "session_id"]
    list_select_related = ["agent"]
    ordering = ["-updated_at", "-id"]
    readonly_fields = ["updated"]
    exclude = ["total_tokens"]  # shown as tokens_total (get_readonly_fields)
    actions = [
        each_row_action(
            "archive_sessions", "Archive", Session.archive, "Archived {count} session(s)."
        ),
        each_row_action(
            "restore_sessions", "Restore", Session.restore, "Restored {count} session(s)."
        ),
        _set_policy_action("allow"),
        _set_policy_action("deny"),
        _set_policy_action("inherit"),
        "export_jsonl",
    ]
    row_actions = (
        RowAction("archive/", "archive", "archive_row"),
        RowAction("restore/", "restore", "restore_row"),
        RowAction("send-policy/", "send_policy", "send_policy_row"),
        RowAction("stop/", "stop", "stop_row"),
        RowAction("export.jsonl", "export", "export_row", method="GET"),
    )
    TRANSCRIPT_PAGE = 50

    def get_readonly_fields(self, request, obj=None):
        # The stored total_tokens may be unset (it then means input + output): the page shows
        # the one definition every surface uses, where the raw column would be.
        return [
            "tokens_total" if name == "total_tokens" else name
            for name in super().get_readonly_fields(request, obj)
        ]

    # Named as the browser names them (reads/session_names.py): a sub-agent or an ACP harness's
    # session by its task label, not kind `other` and channel `unknown`.
    @admin.display(description="name")
    def title(self, session):
        return name_of_session(session).title

    @admin.display(description="kind", ordering="kind")
    def kind_shown(self, session):
        return name_of_session(session).kind_text

    @admin.display(description="channel", ordering="row_channel")
    def channel_shown(self, session):
        return name_of_session(session).channel or "—"

    @admin.display(description="total tokens")
    def tokens_total(self, session):
        return session.tokens_total

    @admin.display(description="updated", ordering="updated_at")
    def updated(self, session):
        return when.time_tag(session.updated_at)

    def get_fieldsets(self, request, obj=None):
        # The page leads with who the session is and its transcript (the template); the ~45
        # stored fields follow, folded.
        fields = self.get_readonly_fields(request, obj)
        return [("All fields", {"classes": ["collapse"], "fields": fields})]

    @admin.display(description="archived", boolean=True, ordering="archived_at")
    def is_archived(self, session):
        return session.archived

    @admin.display(description="send policy", ordering="send_policy")
    def send_policy_display(self, session):
        return session.send_policy or "inherit"

    @admin.action(description="Export JSONL (one session)", permissions=["change"])
    def export_jsonl(self, request, queryset):
        # One transcript per download: a JSONL file has one session header.
        if queryset.count() != 1:
            self.message_user(
                request, "Select exactly one session to export as JSONL.", messages.WARNING
            )
            return None
        return self.jsonl_response(request, queryset.get())

    def jsonl_response(
        self, request, session: Session, *, raw: bool = False
    ) -> StreamingHttpResponse | None:
        # Masked as sessions_history masks; the row's export link takes ?raw=1 (the admin's
        # export needs the change permission, which Viewers do not have). A cold transcript
        # whose archive is lost: a message, no download.
        try:
            return jsonl_export.jsonl_response(
                request, session, raw=raw, filename=str(session.session_id)
            )
        except cold_storage.TranscriptUnavailable as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return None

    def archive_row(self, request, session):
        session.archive()
        self.message_user(request, "Session archived.")

    def restore_row(self, request, session):
        session.restore()
        self.message_user(request, "Session restored.")

    def send_policy_row(self, request, session):
        try:
            store.set_send_policy(session=session, policy=request.POST.get("policy"))
        except InvalidArgument as exc:
            self.message_user(request, exc.message, messages.ERROR)
        else:
            self.message_user(request, f"Send policy: {session.send_policy or 'inherit'}.")

    def export_row(self, request, session):
        raw = request.GET.get("raw") == "1" and self.has_change_permission(request, session)
        return self.jsonl_response(request, session, raw=raw)

    def stop_row(self, request, session):
        """Stop: the session's running and queued runs, and every sub-agent below it."""
        stopped = control.stop_session(
            session,
            reason=f"stopped by {request.user.get_username()} (admin)",
            clear_queued=True,
            cascade=True,
        )
        self.message_user(
            request,
            f"Stopped: {len(stopped.aborted_run_ids)} run(s) aborted, {stopped.ended_tasks} "
            f"waiting task(s) ended, {stopped.descendants} sub-agent session(s) below.",
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        session = self.get_object(request, object_id)
        extra = {}
        if session is not None:
            try:
                page = self.transcript_page(session, request.GET.get("page"))
            except cold_storage.TranscriptUnavailable as exc:
                self.message_user(request, exc.message, messages.ERROR)
                page = None
            parent = (
                Session.objects.filter(key=session.spawned_by).only("pk").first()
                if session.spawned_by
                else None
            )
            extra = {
                "name": name_of_session(session),
                "parent_url": (
                    reverse("admin:sessions_app_session_change", args=[parent.pk]) if parent else ""
                ),
                "browser_url": reverse("ui:transcript", kwargs={"key": session.key}),
                "transcript_page": page,
                "subagent_tree": self.subagent_tree(session),
                "can_act": self.has_change_permission(request, session),
                # An ACP child's harness facts, as the browser's panel shows them (None: not one).
                "acp": facts.page_facts(session),
            }
        return super().change_view(request, object_id, form_url, {**extra, **(extra_context or {})})

    def transcript_page(self, session: Session, page_number):
        """Newest messages first, 50 a page; tool calls and results prepared for <details>."""
        cold_storage.ensure_hot(session)
        rows = Message.objects.filter(session=session).order_by("-seq")
        page = Paginator(rows, self.TRANSCRIPT_PAGE).get_page(page_number)
        # The template reads the prepared entries beside the page's own attributes.
        page.entries = [  # type: ignore[attr-defined]
            transcript_entry(message) for message in page.object_list
        ]
        return page

    @staticmethod
    def subagent_tree(session: Session) -> list[dict]:
        """Sessions spawned by this one, each with its own children (one level down)."""
        children = list(Session.objects.filter(spawned_by=session.key).order_by("created_at"))
        grandchildren: dict[str, list[Session]] = {}
        if children:
            for child in Session.objects.filter(spawned_by__in=[c.key for c in children]).order_by(
                "created_at"
            ):
                grandchildren.setdefault(child.spawned_by, []).append(child)
        return [
            {
                "session": c,
                "name": name_of_session(c),
                "children": [
                    {"session": g, "name": name_of_session(g)} for g in grandchildren.get(c.key, [])
                ],
            }
            for c in children
        ]


def transcript_entry(message: Message) -> dict:
    """One message for the template: its text, its tool calls/results as pretty JSON, and its
    provenance when it came from another session."""
    content = message.content
    texts: list[str] = []
    tools: list[dict] = []
    if message.role == transcript.TOOL_RESULT:
        tools.append(
            {
                "title": f"toolResult {message.tool_name} ({message.tool_call_id})",
                "json": json.dumps(message.to_transcript(), indent=2, ensure_ascii=False),
            }
        )
    elif isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for block in content:
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "toolCall":
                tools.append(
                    {
                        "title": f"toolCall {block.get('name', '')}",
                        "json": json.dumps(block, indent=2, ensure_ascii=False),
                    }
                )
            else:
                tools.append({"title": kind, "json": json.dumps(block, indent=2)})
    provenance = message.provenance if isinstance(message.provenance, dict) else None
    # A completion prompt, an announce step, a silent reply, a harness note: folded to a line.
    internal = internal_rows.classify(message.role, content, provenance)
    return {
        "seq": message.seq,
        "internal": internal.summary if internal is not None else "",
        "role": message.role,
        "timestamp": ms_to_datetime(message.timestamp),
        "text": "\n".join(texts),
        "tools": tools,
        "provenance": provenance,
        "inter_session": bool(provenance and provenance.get("kind") == "inter_session"),
    }


# --- Runs -----------------------------------------------------------------------------------


@admin.register(Run)
class RunAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "session", "kind", "status", "created", "runtime", "error_short"]
    list_filter = ["status", "kind"]
    search_fields = ["id", "session__key", "chain_id"]
    list_select_related = ["session"]
    ordering = ["-created_at"]
    readonly_fields = ["runtime", "parent_link", "child_runs_list", "abort_button"]
    actions = [
        each_row_action("abort_runs", "Abort", engine.abort_run, "Aborted {count} run(s)."),
    ]
    row_actions = (RowAction("abort/", "abort", "abort_row"),)
    row_pk_converter = "uuid"
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "id",
                    "session",
                    "kind",
                    "status",
                    "abort_button",
                    "message",
                    "reply",
                    "error",
                ]
            },
        ),
        ("Chain", {"fields": ["chain_id", "chain_agents", "parent_link", "child_runs_list"]}),
        (
            "Timing",
            {
                "fields": [
                    "created_at",
                    "started_at",
                    "heartbeat_at",
                    "finished_at",
                    "runtime",
                    "deadline",
                    "timeout_seconds",
                    "attempts",
                    "worker",
                ]
            },
        ),
        (
            "More",
            {
                "classes": ["collapse"],
                "fields": [
                    "requester_key",
                    "requester_channel",
                    "idempotency_key",
                    "extra_system_prompt",
                    "model",
                    "label",
                    "flow",
                    "deliver",
                    "input_seq",
                    "reply_seq",
                    "usage",
                ],
            },
        ),
    ]

    def get_fieldsets(self, request, obj=None):
        if self.has_change_permission(request, obj):
            return self.fieldsets
        # Viewers see the run without its Abort button.
        (name, options), *rest = self.fieldsets
        fields = [f for f in options["fields"] if f != "abort_button"]
        return [(name, {**options, "fields": fields}), *rest]

    @admin.display(description="created", ordering="created_at")
    def created(self, run):
        return when.time_tag(run.created_at)

    @admin.display(description="runtime")
    def runtime(self, run):
        return f"{run.runtime_ms} ms" if run.runtime_ms is not None else "—"

    @admin.display(description="error")
    def error_short(self, run):
        return run.error[:80]

    @admin.display(description="parent run")
    def parent_link(self, run):
        if run.parent_run_id is None:
            return "—"
        url = reverse("admin:sessions_app_run_change", args=[run.parent_run_id])
        return format_html('<a href="{}">{}</a>', url, run.parent_run_id)

    @admin.display(description="child runs")
    def child_runs_list(self, run):
        children = run.child_runs.select_related("session").order_by("created_at")
        if not children:
            return "—"
        return format_html_join(
            "",
            '<div><a href="{}">{}</a> {} · {} · {}</div>',
            (
                (
                    reverse("admin:sessions_app_run_change", args=[c.pk]),
                    c.pk,
                    c.kind,
                    c.status,
                    c.session.key,
                )
                for c in children
            ),
        )

    @admin.display(description="abort")
    def abort_button(self, run):
        if run.finished:
            return "—"
        url = reverse("admin:sessions_app_run_abort", args=[run.pk])
        # formaction: submits the surrounding admin form (with its CSRF token) to the abort view.
        return format_html(
            '<button type="submit" formaction="{}" formmethod="post" class="button">Abort</button>',
            url,
        )

    def abort_row(self, request, run):
        if engine.abort_run(run):
            self.message_user(request, "Run aborted.")
        else:
            self.message_user(request, f"Run already {run.status}.", messages.WARNING)


# --- Agents ---------------------------------------------------------------------------------


@admin.register(Agent)
class AgentAdmin(RowActionsMixin, ActionsNeedChangeMixin, admin.ModelAdmin):
    form = AgentForm
    list_display = ["id", "name", "backend_type", "sandboxed", "allow_agents", "test_button"]
    search_fields = ["id", "name"]
    row_actions = (RowAction("test-backend/", "test_backend", "test_backend_row"),)
    row_pk_converter = "str"
    TEST_PROMPT = "Hello from the admin backend test"
    actions = ["refresh_model_catalog"]

    def get_readonly_fields(self, request, obj=None):
        return ["id", "test_button", "webhook_secret", "model_catalog"] if obj is not None else []

    def get_fields(self, request, obj=None):
        fields = list(AgentForm.Meta.fields)
        if obj is not None:
            fields.append("model_catalog")
        if obj is not None and self.has_change_permission(request, obj):
            fields += ["webhook_secret", "test_button"]
        return fields

    @admin.display(description="model catalog")
    def model_catalog(self, agent):
        """What sessions_spawn may give this agent (model_catalog.py), and where it comes from."""
        if agent is None or agent.pk is None:
            return "—"
        models = catalog.catalog(agent, GatewayConfig.load())
        text = ", ".join(models) if models else "none: set a model or backend.models"
        if agent.models_refreshed_at:
            text += f" (/v1/models read {agent.models_refreshed_at:%Y-%m-%d %H:%M} UTC)"
        return text

    @admin.action(description="Refresh model catalog from /v1/models", permissions=["change"])
    def refresh_model_catalog(self, request, queryset):
        for agent in queryset:
            try:
                models = catalog.refresh_models(agent)
            except catalog.RefreshFailed as exc:
                self.message_user(request, f"Not refreshed: {exc}", messages.ERROR)
                continue
            self.message_user(
                request, f"{agent.id}: {len(models)} model(s) from /v1/models.", messages.SUCCESS
            )

    def get_list_display(self, request):
        if self.has_change_permission(request):
            return self.list_display
        return [name for name in self.list_display if name != "test_button"]

    def has_delete_permission(self, request, obj=None):
        # Sessions protect their agent (on_delete=PROTECT); there is no API to delete agents.
        return False

    @admin.display(description="backend")
    def backend_type(self, agent):
        return (agent.backend or {}).get("type", "scripted")

    @admin.display(description="test backend")
    def test_button(self, agent):
        if agent is None or agent.pk is None:
            return "—"
        url = reverse("admin:sessions_app_agent_test_backend", args=[agent.pk])
        # formaction: submits the surrounding admin form (with its CSRF token) to the test view.
        return format_html(
            '<button type="submit" formaction="{}" formmethod="post" name="_test_backend" '
            'value="1" class="button">Test backend</button>',
            url,
        )

    def save_model(self, request, obj, form, change):
        upsert_agent(api_key=None, agent_id=obj.id, data=form.api_data())
        obj.refresh_from_db()

    def test_backend_row(self, request, agent):
        ok, text = self.test_backend(agent, request.POST.get("prompt") or self.TEST_PROMPT)
        self.message_user(
            request,
            f"Backend test of {agent.id}: {text}",
            messages.SUCCESS if ok else messages.ERROR,
        )

    @staticmethod
    def test_backend(agent: Agent, prompt: str) -> tuple[bool, str]:
        """One prompt through the agent's backend, synchronously, with no tools and no session."""
        turn = TurnInput(
            session_key=f"agent:{agent.id}:admin-backend-test",
            agent_id=agent.id,
            kind="send",
            model=agent.model,
            backend=agent.backend,
            messages=[{"role": "user", "content": prompt}],
        )
        try:
            output = get_backend(agent.backend).run(
                turn,
                call_tool=lambda name, args: {
                    "status": "error",
                    "error": "tools are not available in a backend test",
                },
                check_abort=lambda: None,
            )
        except Exception as exc:  # noqa: BLE001 — any backend failure is the answer shown
            return False, f"error: {exc}"
        return True, f"reply: {output.reply}"


# --- Gateway settings -----------------------------------------------------------------------


@admin.register(GatewayConfig)
class GatewayConfigAdmin(SingletonAdminMixin, admin.ModelAdmin):
    form = GatewayConfigForm
    fields = [s.field for s in config.SETTINGS]

    def save_model(self, request, obj, form, change):
        changes = form.changes()
        if changes:
            config.update_config(api_key=None, changes=changes)
        obj.refresh_from_db()

    def get_urls(self):
        from django.urls import path

        retention = path(
            "retention/",
            self.admin_site.admin_view(lambda request: retention_view(self, request)),
            name="sessions_app_gatewayconfig_retention",
        )
        return [retention, *super().get_urls()]


# --- API keys -------------------------------------------------------------------------------


API_KEY_COLUMNS = (
    "lookup_prefix",
    "name",
    "scope",
    "agent",
    "session_key",
    "sandboxed",
    "created_at",
    "last_used_at",
    "revoked_at",
)


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyChangePageMixin, ActionsNeedChangeMixin, admin.ModelAdmin):
    list_display = API_KEY_COLUMNS
    list_filter = ["scope", "sandboxed"]
    search_fields = ["name", "lookup", "session_key"]
    list_select_related = ["agent"]
    ordering = ["-created_at"]
    actions = [each_row_action("revoke_keys", "Revoke", ApiKey.revoke, "Revoked {count} key(s).")]

    @admin.display(description="key", ordering="lookup")
    def lookup_prefix(self, key):
        return f"{ApiKey.PREFIX}_{key.lookup}_…"

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = ApiKeyCreateForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        # A key's page shows what its list row shows; the add page, what creating one takes.
        return ApiKeyCreateForm.Meta.fields if obj is None else API_KEY_COLUMNS

    def get_readonly_fields(self, request, obj=None):
        # Keys never change after creation; only revoke (an action) does.
        return [] if obj is None else self.get_fields(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False  # revoke instead, so last use and revocation stay visible

    def save_model(self, request, obj, form, change):
        if change:
            raise PermissionDenied
        row, plaintext = ApiKey.generate(**form.key_fields)
        obj.pk = row.pk
        for field in ("lookup", "secret_hash", "created_at"):
            setattr(obj, field, getattr(row, field))
        obj._state.adding = False
        # Shown once: messages are consumed by the next page that renders them.
        self.message_user(
            request,
            f"API key created. Copy it now, it will not be shown again: {plaintext}",
            messages.SUCCESS,
        )
