"""The live server: conversations rendered on the server and kept current over SSE.

``_app`` is the Starlette application (``create_app``, ``Live``); ``_engines`` keeps
one engine per watched conversation, following its store; ``_security`` holds what
keeps the server safe on a shared machine (hosts, tokens, bodies); ``_command`` is
``convo serve``. Starlette, sse-starlette and uvicorn (the ``serve`` extra) are
imported only here, so the rest of ``replay`` works without them.

May import: ``replay.protocols``, ``replay.stores``, ``replay.render``,
``replay.logs``, ``replay._errors``, ``engine``, ``definitions``.
"""
