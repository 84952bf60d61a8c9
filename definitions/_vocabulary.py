"""What the built-in kinds share: a tagged event vocabulary claimed by ``id``."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from engine import Claim

__all__ = ["Vocabulary"]


class Vocabulary:
    """One kind's tagged Structs; events are those Structs or dicts with their fields.

    ``claim`` is the kind's ``match``: every event of the vocabulary belongs to the
    node named by its ``id``, and the ``opens`` tag starts it.
    """

    __slots__ = ("opens", "structs", "tags")

    def __init__(self, *structs: type[msgspec.Struct], opens: str) -> None:
        self.structs: Final[dict[str, type[msgspec.Struct]]] = {
            cls.__struct_config__.tag: cls  # type: ignore[misc]
            for cls in structs
        }
        self.tags: Final[dict[type, str]] = {cls: tag for tag, cls in self.structs.items()}
        if opens not in self.structs:
            raise ValueError(f"opens={opens!r} is not one of the tags {sorted(self.structs)}")
        self.opens = opens

    def tag(self, event: Any) -> str | None:
        """The event's tag, or None when it is not of this vocabulary's shapes."""
        tag = event.get("type") if type(event) is dict else self.tags.get(type(event))
        return tag if tag in self.structs else None

    def claim(self, event: Any) -> Claim | None:
        """Claim an event of this vocabulary for the node its ``id`` names."""
        if type(event) is dict:
            tag = event.get("type")
            id = event.get("id")
        else:
            tag = self.tags.get(type(event))
            id = getattr(event, "id", None)
        if tag not in self.structs:
            return None
        if type(id) is not str:
            raise ValueError(f"{tag} event needs an 'id' str, got {id!r}")
        return Claim(id, "start" if tag == self.opens else "update")

    def typed(self, event: Any) -> Any:
        """The Struct form of an event (a dict is validated and its defaults filled)."""
        if type(event) is dict:
            return msgspec.convert(event, self.structs[event["type"]])
        return event
