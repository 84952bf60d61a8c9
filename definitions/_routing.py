"""The routing key shared by the built-in kinds and the protocol sets."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, Final, cast

from engine import Publication

__all__ = ["ByType", "event_type"]

_struct_tags: dict[type, Hashable] = {}


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
    cached = _struct_tags.get(cls)
    if cached is not None:
        return event.route if cached is _BY_ROUTE else cached  # type: ignore[attr-defined]
    config = getattr(cls, "__struct_config__", None)
    # mypy does not see a class as Hashable (its __hash__ is unbound): cast.
    tag = cast(Hashable, cls) if config is None or config.tag is None else config.tag
    if config is not None and "route" in cls.__struct_fields__:  # type: ignore[attr-defined]
        _struct_tags[cls] = _BY_ROUTE
        return event.route  # type: ignore[attr-defined, no-any-return]
    _struct_tags[cls] = tag
    return tag


_BY_ROUTE: Final = object()  # the class's events are routed by their ``route`` field


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
