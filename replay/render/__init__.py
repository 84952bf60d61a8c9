"""Rendering: a view (the engine's nodes) as JSON, terminal text or an HTML page.

``_common`` holds per-kind dispatch to the definitions' own ``render_*`` members and
the JSON form of a state; ``_text`` the terminal renderer; ``_html`` the page (and the
fragment cache the live server sends from). Conversation content is untrusted:
every renderer escapes it.

May import: ``replay._errors``, ``engine``, ``definitions``.
"""
