"""The routing key shared by the built-in kinds and the protocol sets."""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from engine import Publication

__all__ = ["ByType", "event_type"]


def event_type(event: object) -> Hashable:
    """An event's type for ``create_conversation_engine(event_type=...)``.

    A dict's ``"type"`` field (``None`` when absent), a tagged msgspec Struct's tag,
    a routed envelope's ``route`` (a Struct with that field: the ``Routed`` of
    ``ag_ui`` and ``ai_sdk``), otherwise the event's class. Definitions declare the
    same values in ``event_types`` so the engine calls only the ``match`` functions
    that can claim the event.
    """
    cls = type(event)
    if cls is dict:
        return event.get("type")  # type: ignore[attr-defined, no-any-return]
    key = _keys.get(cls)
    if key is None:
        key = _keys[cls] = _key_of(cls)
    return key(event)


# Each class's key function, chosen when its first event is met: a C callable each,
# so that the engine's call per event runs no Python frame.
_keys: dict[type, Callable[[Any], Hashable]] = {}


def _key_of(cls: type) -> Callable[[Any], Hashable]:
    """The key function of the events of class ``cls`` (see ``event_type``)."""
    config = getattr(cls, "__struct_config__", None)
    if config is None:
        return type
    if "route" in cls.__struct_fields__:  # type: ignore[attr-defined]
        return operator.attrgetter("route")
    if config.tag is None:
        return type
    return operator.attrgetter("__struct_config__.tag")


class ByType(dict[Hashable, Publication]):
    """A definition's ``publication`` per event type (types left out are immediate)
    that is also a function of the event.

    A routed engine resolves the mapping once per event type: no call per event. An
    engine without ``event_type=`` calls it, and ``type_of`` gives the event's type
    (the key the routed engine would have looked up).
    """

    __slots__ = ("_type_of",)

    def __init__(
        self, by_type: Mapping[Any, Publication], type_of: Callable[[Any], Hashable]
    ) -> None:
        super().__init__(by_type)
        self._type_of = type_of

    def __call__(self, event: Any) -> Publication:
        return self.get(self._type_of(event), "immediate")
