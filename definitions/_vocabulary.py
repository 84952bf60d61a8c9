"""What the built-in kinds share: a tagged event vocabulary claimed by ``id``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from engine import Claim

__all__ = ["Vocabulary"]

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


def _claimer(tags: dict[type, str], opens: str) -> Callable[[Any], Claim | None]:
    # role by tag, for dict events (by "type") and Struct events (by class)
    roles: dict[object, str] = {tag: "start" if tag == opens else "update" for tag in tags.values()}
    roles.update({cls: roles[tag] for cls, tag in tags.items()})
    updates: dict[str, Claim] = {}

    def claim(event: Any) -> Claim | None:
        if type(event) is dict:
            role = roles.get(event.get("type"))
            if role is None:
                return None
            id = event.get("id")
        else:
            role = roles.get(type(event))
            if role is None:
                return None
            id = getattr(event, "id", None)
        if type(id) is not str:
            tag = event.get("type") if type(event) is dict else tags[type(event)]
            raise ValueError(f"{tag} event needs an 'id' str, got {id!r}")
        if role == "update":
            cached = updates.get(id)
            if cached is None:
                if len(updates) >= _CLAIM_CACHE_SIZE:
                    updates.clear()
                cached = updates[id] = Claim(id, "update")
            return cached
        return Claim(id, "start")

    return claim
