"""The model context of a log: the request before each model call, and its economy.

``_requests`` projects a recording to the provider requests a model would get
(``requests``, ``check_requests``) and builds the one after the log
(``next_request``: the recorded model, tools and settings carried over);
``_recorded`` measures how a recording's own requests are reproduced by the
projection (``convo check``); ``_economy`` projects under an economy policy and
measures it; ``_workbench`` is where spilled content lives; ``_command`` is
``convo context``.

May import: ``replay.protocols``, ``replay.logs``, ``engine``, ``definitions``.
"""

from ._requests import ContextOptions as ContextOptions
from ._requests import NextRequest as NextRequest
from ._requests import next_request as next_request

__all__ = ["ContextOptions", "NextRequest", "next_request"]
