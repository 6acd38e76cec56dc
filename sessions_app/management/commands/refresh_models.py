"""Read /v1/models of every OpenAI-compatible agent with backend.refreshModels (or the agents
named) into its model catalog (sessions_app/runs/model_catalog.py). A cron line or a deploy step."""

from django.core.management.base import BaseCommand, CommandError

from sessions_app.models import Agent
from sessions_app.runs import model_catalog


class Command(BaseCommand):
    help = "Refresh agents' model catalogs from their backend's /v1/models."

    def add_arguments(self, parser):
        parser.add_argument(
            "agent_ids", nargs="*", help="Agents to refresh (default: all with refreshModels)."
        )

    def handle(self, *args, agent_ids, **options):
        if agent_ids:
            agents = list(Agent.objects.filter(pk__in=agent_ids))
            missing = sorted(set(agent_ids) - {a.pk for a in agents})
            if missing:
                raise CommandError(f"No such agent: {', '.join(missing)}")
        else:
            agents = [
                a
                for a in Agent.objects.all()
                if (a.backend or {}).get("type") == "openai"
                and (a.backend or {}).get("refreshModels")
            ]
        failed = 0
        for agent in agents:
            try:
                models = model_catalog.refresh_models(agent)
            except model_catalog.RefreshFailed as exc:
                failed += 1
                self.stderr.write(str(exc))
                continue
            self.stdout.write(f"{agent.id}: {len(models)} model(s)")
        if failed:
            raise CommandError(f"{failed} agent(s) not refreshed")
