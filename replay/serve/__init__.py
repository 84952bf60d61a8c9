"""The live server: conversations rendered on the server and kept current over SSE.

The public way in: ``create_app(source, ServeOptions(...))`` is an ASGI app to serve
alone or mount in yours (docs/live.md); ``conversation_html`` and ``assets_html`` put
the view in your own page. ``_app`` is the Starlette application; ``_options`` the
settings record; ``_engines`` keeps
one engine per watched conversation, following its store; ``_security`` holds what
keeps the server safe on a shared machine (hosts, tokens, bodies); ``_command`` is
``convo serve``. Starlette, sse-starlette and uvicorn (the ``serve`` extra) are
imported only here, so the rest of ``replay`` works without them.

May import: ``replay.protocols``, ``replay.stores``, ``replay.render``,
``replay.logs``, ``replay._errors``, ``engine``, ``definitions``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import Live, Source, assets_html, conversation_html, create_app
    from ._options import ServeOptions

__all__ = ["Live", "ServeOptions", "Source", "assets_html", "conversation_html", "create_app"]

# Imported on first use (PEP 562): `convo` imports ``replay.serve._command`` for its
# arguments, which must work without starlette installed.
_HOME = {"ServeOptions": "._options"} | dict.fromkeys(
    ["Live", "Source", "assets_html", "conversation_html", "create_app"], "._app"
)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'replay.serve' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name], __name__), name)
