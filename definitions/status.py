"""The ``status`` kind: a status row (running, done, failed) with progress and a label.

Event vocabulary (``type`` is the tag; ``id`` names the row)::

    {"type": "status.update", "id": "s1", "status": "running", "label": "Indexing",
                              "completed": 3, "total": 10}
    {"type": "status.update", "id": "s1", "status": "running", "progress": 0.5}
    {"type": "status.update", "id": "s1", "status": "done", "label": "Indexed 10 files"}

Every update is the whole row: it *replaces* the previous one (fields it leaves
out are gone). So each update claims ``"start"``: the engine reopens the row in
place (rule 4), keeping its position, and a log window that cut off the first
update still shows the row. ``progress`` is a fraction in [0, 1];
``completed``/``total`` are counts; a row may carry either, both or neither.

Events may be the Struct below or plain dicts with the same fields, converted
with ``msgspec.convert``. Running rows wait for the next animation frame
(progress ticks coalesce); ``done`` and ``failed`` are published immediately.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeAlias

import msgspec

from engine import Claim, Node, Publication, Reader

__all__ = ["DEFINITION", "Event", "StatusDefinition", "StatusRow", "Update"]

Status: TypeAlias = Literal["running", "done", "failed"]
Fraction = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Count = Annotated[int, msgspec.Meta(ge=0)]


class StatusRow(msgspec.Struct, frozen=True):
    """A status node's state: the latest update's fields."""

    status: Status = "running"
    label: str = ""
    progress: Fraction | None = None
    completed: Count | None = None
    total: Count | None = None

    @property
    def fraction(self) -> float | None:
        """Progress as a fraction: ``progress``, else ``completed / total``, else ``None``."""
        if self.progress is not None:
            return self.progress
        if self.completed is not None and self.total:
            return min(1.0, self.completed / self.total)
        return None


class Update(msgspec.Struct, frozen=True, tag_field="type", tag="status.update"):
    """Set row ``id`` to these fields, replacing the previous update."""

    id: str
    status: Status = "running"
    label: str = ""
    progress: Fraction | None = None
    completed: Count | None = None
    total: Count | None = None


Event: TypeAlias = Update
"""Any status event, for typed decoding: ``msgspec.json.Decoder(status.Event)``."""

_TAG: Final = "status.update"


class StatusDefinition:
    """Folds ``status.update`` events into ``StatusRow`` nodes keyed by row id."""

    kind: Final = "status"
    event_types: Final = frozenset({_TAG})

    def match(self, event: Event | dict[str, Any]) -> Claim | None:
        """Claim ``status.update`` events by ``id``, always as a start: updates replace."""
        if type(event) is dict:
            if event.get("type") != _TAG:
                return None
            id = event.get("id")
        elif type(event) is Update:
            id = event.id
        else:
            return None
        if type(id) is not str:
            raise ValueError(f"status.update event needs an 'id' str, got {id!r}")
        return Claim(id, "start")

    def start(self, event: Event | dict[str, Any], reader: Reader) -> StatusRow:
        """The row as this update describes it."""
        typed = msgspec.convert(event, Update) if type(event) is dict else event
        assert isinstance(typed, Update)
        return StatusRow(typed.status, typed.label, typed.progress, typed.completed, typed.total)

    def update(self, state: StatusRow, event: Event | dict[str, Any]) -> StatusRow:
        """Never called: every status event is a start (a replacing reopen)."""
        raise ValueError("status rows are replaced by status.update starts, never updated")

    def publication(self, event: Event | dict[str, Any]) -> Publication:
        """Running rows wait for the next animation frame; done and failed are immediate."""
        status = event.get("status", "running") if isinstance(event, dict) else event.status
        return "animation-frame" if status == "running" else "immediate"

    def render_text(self, node: Node) -> str:
        """``[status] label (3/10, 30%)``."""
        row: StatusRow = node.state
        return f"[{row.status}] {row.label}{_progress(row)}".rstrip()

    def render_html(self, node: Node) -> str:
        """One line: the status, the label and the progress when known."""
        from ._render import line

        row: StatusRow = node.state
        progress = _progress(row).strip(" ()")
        fraction = row.fraction
        bar = "" if fraction is None else f'<progress max="1" value="{fraction:.4f}"></progress>'
        return line(
            "status",
            ("decision", row.status),
            ("label", row.label),
            ("progress", progress),
            status=row.status,
            extra=bar,
            inline=("label",),
        )

    def render_json(self, node: Node) -> dict[str, Any]:
        """The row's fields as a dict."""
        return msgspec.structs.asdict(node.state)


def _progress(row: StatusRow) -> str:
    parts = []
    if row.completed is not None:
        parts.append(
            f"{row.completed}/{row.total}" if row.total is not None else str(row.completed)
        )
    fraction = row.fraction
    if fraction is not None:
        parts.append(f"{fraction:.0%}")
    return f" ({', '.join(parts)})" if parts else ""


DEFINITION: Final = StatusDefinition()
"""The status definition to register."""
