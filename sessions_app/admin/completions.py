"""The operator's view of sub-agent results owed to requesters (docs/orchestration.md): where
each stands, how many attempts it took, and why one failed. Read-only: the engine and the sweep
move them."""

from __future__ import annotations

from django.contrib import admin

from ..models import Completion
from .core import ReadOnlyModelAdmin


@admin.register(Completion)
class CompletionAdmin(ReadOnlyModelAdmin):
    list_display = [
        "child_session",
        "requester_key",
        "status",
        "attempts",
        "created_at",
        "error_short",
    ]
    list_filter = ["status", "private"]
    search_fields = ["requester_key", "child_session__key", "child_run__id"]
    list_select_related = ["child_session"]
    ordering = ["-created_at"]

    @admin.display(description="last error")
    def error_short(self, completion: Completion) -> str:
        return completion.last_error[:120]
