"""`/api/v1/schema/` from a per-process cache (issue 28 item 1).

The schema is the same document for every client: it is served public (SERVE_PUBLIC, no
authentication), so nothing in it depends on who asks; it varies only with the requested format
(content negotiation), the language and the API version, which are the cache key. Building it
walks every view and tool declaration: 300 anonymous requests for it at once kept another
client waiting 7.6 s. Now a process builds each variant once and then answers with the stored
bytes. The cache is emptied when a setting changes (tests), and holds at most VARIANTS entries
(the version and `lang` come from the query string, so a client could ask for endless ones:
past the bound a variant is built but not kept).
"""

from __future__ import annotations

import threading

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpResponse
from django.utils import translation
from drf_spectacular.views import SpectacularAPIView

VARIANTS = 32

_lock = threading.Lock()
_building = threading.Lock()
_built: dict[tuple, object] = {}  # (version, language) → the schema
_rendered: dict[tuple, tuple[bytes, str, str]] = {}  # + media type → (bytes, type, filename)
builds = 0  # schemas built by this process (tests)


class CachedSchemaView(SpectacularAPIView):
    def _get_schema_response(self, request):
        if not self.serve_public:  # filtered by the requester's permissions: not shared
            return super()._get_schema_response(request)
        version = self.api_version or request.version or self._get_version_parameter(request)
        key = (version, translation.get_language(), request.accepted_media_type)
        with _lock:
            hit = _rendered.get(key)
        if hit is None:
            hit = self._render(request, version, key)
        content, content_type, filename = hit
        response = HttpResponse(content, content_type=content_type)
        response["Content-Disposition"] = f'inline; filename="{filename}"'
        return response

    def _render(self, request, version, key) -> tuple[bytes, str, str]:
        global builds
        # One build at a time: the others wait for it and take its schema. drf-spectacular's
        # first build is not thread-safe (concurrent first requests failed with 500s in its
        # extension loading; measured, bench/page_flood_bench.py --path /api/v1/schema/).
        with _building:
            with _lock:
                schema = _built.get(key[:2])
            if schema is None:
                generator = self.generator_class(
                    urlconf=self.urlconf, api_version=version, patterns=self.patterns
                )
                schema = generator.get_schema(request=request, public=True)
                with _lock:
                    builds += 1
                    if len(_built) < VARIANTS:
                        _built[key[:2]] = schema
        renderer = request.accepted_renderer
        media_type = request.accepted_media_type
        content = renderer.render(schema, media_type, self.get_renderer_context())
        # As DRF's Response names it.
        charset = renderer.charset
        content_type = renderer.media_type + (f"; charset={charset}" if charset else "")
        hit = (content, content_type, self._get_filename(request, version))
        with _lock:
            if len(_rendered) < VARIANTS:
                _rendered[key] = hit
        return hit


def forget() -> None:
    with _lock:
        _built.clear()
        _rendered.clear()


@receiver(setting_changed)
def _settings_changed(**kwargs) -> None:
    forget()
