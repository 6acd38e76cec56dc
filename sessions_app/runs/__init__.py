"""The run engine: agent backends, run execution on django-q2 workers, the agent-to-agent flow,
sub-agent announce, waits and the sweeper."""
