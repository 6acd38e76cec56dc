from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "sessions_app"
    verbose_name = "Sessions"

    def ready(self) -> None:
        # The composition root: the app's modules exist only once Django's registry is ready.
        from django.core.signals import request_finished
        from django_q.signals import post_spawn

        from .access import key_cache
        from .acp import runtime as acp_runtime
        from .runs import engine, tool_policy, watchdog
        from .tools import offer, policies

        # The engine runs the tools' calls and ACP harness turns, which sit above it; the offer
        # decides by the policies the tools declare.
        tool_policy.install(policies())
        engine.install(tools=offer, harnesses=acp_runtime)
        # Each django-q2 worker process watches for runs a dead worker left (runs/watchdog.py).
        post_spawn.connect(watchdog.start, dispatch_uid="openclaw-run-watchdog")
        # The API keys' last use is written after the response, not on the request's path.
        request_finished.connect(key_cache.flush_touches, dispatch_uid="openclaw-key-touches")
