"""What the built-in kinds share: a tagged event vocabulary claimed by ``id``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from engine import Claim

__all__ = ["Vocabulary", "delta_pieces"]

# Update claims are shared per id (a Claim is a frozen value): building one costs
# about as much as the rest of a delta's match. The cache is shared by every engine
# in the process, so it is emptied when it grows past this many ids.
_CLAIM_CACHE_SIZE: Final = 4096


class Vocabulary:
    """One kind's tagged Structs; events are those Structs or dicts with their fields.

    ``claim`` is the kind's ``match``: every event of the vocabulary belongs to the
    node named by its ``id``, and the ``opens`` tag starts it.
    """

    __slots__ = ("claim", "opens", "structs", "tags")

    def __init__(self, *structs: type[msgspec.Struct], opens: str) -> None:
        self.structs: Final[dict[str, type[msgspec.Struct]]] = {
            cls.__struct_config__.tag: cls  # type: ignore[misc]
            for cls in structs
        }
        self.tags: Final[dict[type, str]] = {cls: tag for tag, cls in self.structs.items()}
        if opens not in self.structs:
            raise ValueError(f"opens={opens!r} is not one of the tags {sorted(self.structs)}")
        self.opens = opens
        self.claim: Final = _claimer(self.tags, opens)
        """Claim an event of this vocabulary for the node its ``id`` names (a closure,
        not a method: the engine calls it once per event of the kind)."""

    def tag(self, event: Any) -> str | None:
        """The event's tag, or None when it is not of this vocabulary's shapes."""
        tag = event.get("type") if type(event) is dict else self.tags.get(type(event))
        return tag if tag in self.structs else None

    def typed(self, event: Any) -> Any:
        """The Struct form of an event (a dict is validated and its defaults filled)."""
        if type(event) is dict:
            return msgspec.convert(event, self.structs[event["type"]])
        return event


def delta_pieces(events: list[Any], tag: str, struct: type) -> list[str | None]:
    """The ``pieces`` of a run for ``fold_run``: each delta's text (a dict tagged
    ``tag`` or a ``struct`` Struct, with a str ``text``), None for any other event,
    which ``update`` then folds (and names, if it is bad)."""
    if type(events[0]) is dict:  # a run is all dicts or all Structs, as decoded
        return [
            t
            if type(e) is dict and e.get("type") == tag and type(t := e.get("text")) is str
            else None
            for e in events
        ]
    return [t if type(e) is struct and type(t := e.text) is str else None for e in events]  # type: ignore[attr-defined]


def _claimer(tags: dict[type, str], opens: str) -> Callable[[Any], Claim | None]:
    # The keys that claim an update and those that claim a start: a key is an event's
    # "type" (a dict) or its class (a Struct). Set lookups: cheaper than a dict's get().
    updates_of: set[object] = {tag for tag in tags.values() if tag != opens}
    updates_of |= {cls for cls, tag in tags.items() if tag != opens}
    starts: set[object] = {opens, *(cls for cls, tag in tags.items() if tag == opens)}
    updates: dict[object, Claim] = {}

    def claim(event: Any) -> Claim | None:
        if type(event) is dict:
            key = event.get("type")
            if key in updates_of:
                id = event.get("id")
            elif key in starts:
                return Claim(_id(key, event.get("id")), "start")
            else:
                return None
        else:
            key = type(event)
            if key in updates_of:
                id = getattr(event, "id", None)
            elif key in starts:
                return Claim(_id(key, getattr(event, "id", None)), "start")
            else:
                return None
        try:
            return updates[id]  # the hot path: a delta of an id seen before
        except (KeyError, TypeError):  # TypeError: an unhashable id
            return _update(_id(key, id))

    def _update(id: str) -> Claim:
        if len(updates) >= _CLAIM_CACHE_SIZE:
            updates.clear()
        cached = updates[id] = Claim(id, "update")
        return cached

    def _id(key: object, id: object) -> str:
        # A str subclass equal to a cached id would hit the cache; a miss must give the
        # same answer, so it is accepted as its plain str.
        if not isinstance(id, str):
            tag = key if type(key) is str else tags[key]  # type: ignore[index]
            raise ValueError(f"{tag} event needs an 'id' str, got {id!r}")
        return str.__str__(id)

    return claim
