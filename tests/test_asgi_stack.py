"""The ASGI entry point: the API is served without the cookie middleware (no thread hops), pages
keep the whole stack, and both get the security headers (openclaw_site/middleware.py)."""

import pytest

from openclaw_site.middleware import is_api_path, is_api_request
from tests.servers import manage

SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
}


def headers(response) -> dict:
    return {name.lower(): value for name, value in response.headers.items()}


def test_api_requests_get_the_headers_and_no_cookies(demo_server):
    token = manage("create_api_key", "--scope", "agent", "--agent", "main").strip().splitlines()[-1]
    # A browser's cookies mean nothing to the API: no CSRF check, no session, none set.
    cookies = {"Cookie": "csrftoken=abc; sessionid=def"}
    invoked = demo_server.request(
        "POST", "/tools/invoke", body={"tool": "agents_list"}, token=token, headers=cookies
    )
    listed = demo_server.request("GET", "/api/v1/agents/", token=token, headers=cookies)
    refused = demo_server.request("GET", "/api/v1/agents/")
    for response, status in ((invoked, 200), (listed, 200), (refused, 401)):
        assert response.status == status
        assert SECURITY_HEADERS.items() <= headers(response).items()
        assert "set-cookie" not in headers(response)
    # CommonMiddleware still applies: a missing slash on a GET redirects (urllib follows it).
    assert demo_server.request("GET", "/api/v1/agents", token=token).status == 200


def test_pages_keep_the_whole_stack(demo_server):
    login = demo_server.request("GET", "/accounts/login/")
    assert login.status == 200
    assert SECURITY_HEADERS.items() <= headers(login).items()
    assert "csrftoken=" in headers(login).get("set-cookie", "")


@pytest.mark.parametrize(
    ("path", "root", "api"),
    [
        ("/api/v1/sessions/", "", True),
        ("/tools/invoke", "", True),
        ("/sessions/agent:main:main/", "", False),
        ("/admin/", "", False),
        ("/apikeys/", "", False),
        ("/oc/api/v1/agents/", "/oc", True),  # mounted under a prefix
        ("/oc/admin/", "/oc", False),
    ],
)
def test_api_paths(path, root, api):
    assert is_api_path({"path": path, "root_path": root}) is api


@pytest.mark.parametrize(
    ("path", "headers", "api"),
    [
        ("/sessions/agent:main:main/history", [(b"authorization", b"Bearer x")], True),
        ("/sessions/agent:main:main/history", [(b"accept", b"text/html")], False),
        ("/sessions/agent:main:main/", [(b"authorization", b"Bearer x")], False),
        ("/api/v1/agents/", [], True),
    ],
)
def test_openclaws_history_path_with_a_key_is_served_as_the_api(path, headers, api):
    # A browser's request there keeps the session middleware (it gets the transcript page).
    assert is_api_request({"path": path, "root_path": "", "headers": headers}) is api
