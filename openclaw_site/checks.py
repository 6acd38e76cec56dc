"""`manage.py check --deploy` for our middleware stack.

Django's deploy checks find SecurityMiddleware and XFrameOptionsMiddleware by their dotted
names; ours are subclasses (openclaw_site/middleware.py), so Django reports them missing (W001,
W002, silenced in settings) and skips every check that depends on them. Here they are recognised
as what they are, and those checks run with that knowledge: HSTS, SSL redirect, nosniff,
Referrer-Policy, COOP and X-Frame-Options keep Django's ids and texts.
"""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Tags, Warning, register
from django.core.checks.security import base
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.test.utils import override_settings
from django.utils.module_loading import import_string

DJANGO_NAMES = {
    SecurityMiddleware: "django.middleware.security.SecurityMiddleware",
    XFrameOptionsMiddleware: "django.middleware.clickjacking.XFrameOptionsMiddleware",
}
DEPENDENT_CHECKS = (
    base.check_sts,
    base.check_sts_include_subdomains,
    base.check_sts_preload,
    base.check_content_type_nosniff,
    base.check_ssl_redirect,
    base.check_xframe_deny,
    base.check_referrer_policy,
    base.check_cross_origin_opener_policy,
)


def as_django_names(middleware: list[str]) -> list[str]:
    """The MIDDLEWARE list with our subclasses written as the Django classes they extend."""
    named = []
    for path in middleware:
        try:
            cls = import_string(path)
        except ImportError:
            named.append(path)
            continue
        parent = next((name for k, name in DJANGO_NAMES.items() if issubclass(cls, k)), None)
        named.append(parent or path)
    return named


@register(Tags.security, deploy=True)
def check_site_middleware(app_configs, **kwargs):
    named = as_django_names(list(settings.MIDDLEWARE))
    found = []
    for cls, name in DJANGO_NAMES.items():
        if name not in named:
            found.append(
                Warning(
                    f"MIDDLEWARE has no {cls.__name__} (Django's or a subclass of it).",
                    id=f"openclaw.W00{1 if cls is SecurityMiddleware else 2}",
                )
            )
    with override_settings(MIDDLEWARE=named):
        for check in DEPENDENT_CHECKS:
            found.extend(check(app_configs))
    return [w for w in found if w.id not in settings.SILENCED_SYSTEM_CHECKS]
