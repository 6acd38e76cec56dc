"""What the sessions_history tests share: one call, and its texts. (The `main_session`
fixture is in conftest.py.)"""


def history(api, **args):
    return api.details("sessions_history", {"sessionKey": "main", **args})


def texts(details):
    """Each message's text (the first text block of a list content), oldest first."""
    out = []
    for m in details["messages"]:
        content = m.get("content")
        out.append(content if isinstance(content, str) else content[0].get("text"))
    return out
