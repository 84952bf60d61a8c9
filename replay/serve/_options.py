"""``ServeOptions``: every setting of the live server, in one record.

``convo serve`` builds one from its arguments, an application builds one in code;
``create_app`` reads it and nothing else, so each setting is spelled once.

May import: ``replay.serve._security``, ``definitions``, ``engine``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import attrs

from definitions import ProtocolSet, builtin

from ._security import allowed_hosts, check_token

__all__ = ["ServeOptions"]


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class ServeOptions:
    """How the live server folds, guards and paces what it serves.

    ``definitions``: every conversation's set (definitions or a ``ProtocolSet``);
    ``None`` detects each conversation's protocol from its first events, as ``convo
    replay`` does. ``token`` turns ingest on (``POST .../events`` with ``Authorization:
    Bearer``); ``read_token`` makes every page and stream need it too; tokens are at
    least 16 characters (``ValueError`` otherwise). ``hosts``: the ``Host`` names
    answered (loopback ones by default; ``["*"]`` for any). ``vocabulary``: what ingest
    accepts (``None``: any JSON object). ``stylesheets``: CSS texts served with the
    page's own (a definition may bring its own as a ``stylesheet`` attribute).
    ``background`` coroutines run for the app's lifetime (the demo writer).
    """

    definitions: Iterable[Any] | ProtocolSet | None = None
    token: str | None = None
    read_token: str | None = None
    hosts: tuple[str, ...] = attrs.field(
        default=tuple(allowed_hosts("127.0.0.1")), converter=_tuple
    )
    vocabulary: Any = builtin.Event
    stylesheets: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    body_timeout: float = 10.0
    poll_interval: float = 0.05
    frame_interval: float = 0.016
    ping_interval: float = 15.0
    send_timeout: float = 30.0
    max_loaded: int = 64
    # Each called with the app's ``Live`` (typed Any: _app imports this module).
    background: tuple[Callable[[Any], Coroutine[Any, Any, None]], ...] = attrs.field(
        default=(), converter=_tuple
    )

    def __attrs_post_init__(self) -> None:
        check_token(self.token, "the ingest token")
        check_token(self.read_token, "the read token")
