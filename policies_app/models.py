# Send policies (reference §6) arrive with the run engine; the per-session override already
# lives on sessions_app.Session.send_policy.
