from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "sessions_app"
    verbose_name = "Sessions"

    def ready(self) -> None:
        from django_q.signals import post_spawn

        from .runs import watchdog

        # Each django-q2 worker process watches for runs a dead worker left (runs/watchdog.py).
        post_spawn.connect(watchdog.start, dispatch_uid="openclaw-run-watchdog")
