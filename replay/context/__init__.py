"""The model context of a log: the request before each model call, and its economy.

``_requests`` projects a recording to the provider requests a model would get
(``requests``, ``check_requests``); ``_economy`` does the same under an economy
policy and measures it; ``_workbench`` is where spilled content lives; ``_command``
is ``convo context``.

May import: ``replay.protocols``, ``replay.logs``, ``engine``, ``definitions``.
"""
