"""The routing key shared by the built-in kinds and the protocol sets."""

from __future__ import annotations

from collections.abc import Hashable
from typing import cast

__all__ = ["event_type"]

_struct_tags: dict[type, Hashable] = {}


def event_type(event: object) -> Hashable:
    """An event's type for ``create_conversation_engine(event_type=...)``.

    A dict's ``"type"`` field (``None`` when absent), a tagged msgspec Struct's tag,
    otherwise the event's class. Definitions declare the same values in
    ``event_types`` so the engine calls only the ``match`` functions that can claim
    the event.
    """
    cls = type(event)
    if cls is dict:
        return event.get("type")  # type: ignore[attr-defined, no-any-return]
    cached = _struct_tags.get(cls)
    if cached is not None:
        return cached
    config = getattr(cls, "__struct_config__", None)
    # mypy does not see a class as Hashable (its __hash__ is unbound): cast.
    tag = cast(Hashable, cls) if config is None or config.tag is None else config.tag
    _struct_tags[cls] = tag
    return tag
