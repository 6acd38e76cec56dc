"""Who may use the browser: members of Viewers or Operators (migration 0006), and superusers.

Decided by the permissions those groups carry, so a permission given in the admin counts too:
`view_session` to browse, `change_session` for the send-policy override.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login

from .errors import error_page

VIEW_PERMISSION = "sessions_app.view_session"
OVERRIDE_PERMISSION = "sessions_app.change_session"


def can_view(user) -> bool:
    return bool(user.is_active and (user.is_superuser or user.has_perm(VIEW_PERMISSION)))


def can_override(user) -> bool:
    return bool(user.is_active and (user.is_superuser or user.has_perm(OVERRIDE_PERMISSION)))


def viewer_required(view):
    """Anonymous → the login page; logged in without access → 403."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not can_view(request.user):
            return error_page(
                request,
                403,
                "Your account may not browse sessions. Ask an admin to add you to the Viewers "
                "or Operators group.",
            )
        return view(request, *args, **kwargs)

    return wrapped
