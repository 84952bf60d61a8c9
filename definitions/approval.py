"""The ``approval`` kind: a request for permission and its decision.

Event vocabulary (``type`` is the tag; ``id`` names the approval)::

    {"type": "approval.request",  "id": "a1", "action": "Run `rm -rf build/`",
                                  "tool_call_id": "c2"}
    {"type": "approval.decision", "id": "a1", "decision": "approved",
                                  "by": "alice", "reason": "looks safe"}

``action`` says what needs permission; ``tool_call_id`` (optional) the tool call
it gates. The kinds are unaware of each other: a denied call's ``tool_call``
node learns of the denial from its own ``tool_call.denied`` event, which the agent
emits next to the decision. A decision is final: a second one is an error (a
repeated request reopens the approval as pending).

Events may be the Structs below or plain dicts with the same fields; both are
discrete facts, converted with ``msgspec.convert`` and published immediately.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec

from engine import Node, Reader

from ._vocabulary import Vocabulary

__all__ = ["DEFINITION", "ApprovalDefinition", "ApprovalState", "Decision", "Event", "Request"]

Verdict: TypeAlias = Literal["approved", "denied"]


class Request(msgspec.Struct, frozen=True, tag_field="type", tag="approval.request"):
    """Ask permission for ``action``, for tool call ``tool_call_id`` when given."""

    id: str
    action: str
    tool_call_id: str | None = None


class Decision(msgspec.Struct, frozen=True, tag_field="type", tag="approval.decision"):
    """``decision`` on approval ``id``, made ``by`` someone, for ``reason``."""

    id: str
    decision: Verdict
    by: str | None = None
    reason: str | None = None


Event: TypeAlias = Request | Decision
"""Any approval event, for typed decoding: ``msgspec.json.Decoder(approval.Event)``."""

_VOCABULARY: Final = Vocabulary(Request, Decision, opens="approval.request")
_TAGS: Final = _VOCABULARY.tags


class ApprovalState(msgspec.Struct, frozen=True):
    """An approval node's state: ``status`` is ``"pending"`` until the decision."""

    action: str
    tool_call_id: str | None = None
    status: Literal["pending", "approved", "denied"] = "pending"
    by: str | None = None
    reason: str | None = None


_typed: Final = _VOCABULARY.typed


class ApprovalDefinition:
    """Folds ``approval.*`` events into ``ApprovalState`` nodes keyed by approval id."""

    kind: Final = "approval"
    event_types: Final = frozenset(_VOCABULARY.structs)
    publication: Final = "immediate"

    # Claim by ``id``; 'approval.request' opens the node. An attribute, not a method: the
    # engine calls the vocabulary's claim directly, one call less per event.
    match: Final = staticmethod(_VOCABULARY.claim)

    def start(self, event: Event | dict[str, Any], reader: Reader) -> ApprovalState:
        """A pending approval of the requested action."""
        typed = _typed(event)
        assert isinstance(typed, Request)
        return ApprovalState(typed.action, typed.tool_call_id)

    def update(self, state: ApprovalState, event: Event | dict[str, Any]) -> ApprovalState:
        """Record the decision; a second decision is an error."""
        typed = _typed(event)
        if not isinstance(typed, Decision):
            raise ValueError(f"cannot update an approval with {typed!r}")
        if state.status != "pending":
            raise ValueError(f"approval.decision for an approval that is already {state.status}")
        return ApprovalState(
            state.action, state.tool_call_id, typed.decision, typed.by, typed.reason
        )

    def render_text(self, node: Node) -> str:
        """``approval [call]: action -> status (by, reason)``."""
        state: ApprovalState = node.state
        target = f" for {state.tool_call_id}" if state.tool_call_id else ""
        text = f"approval{target}: {state.action} -> {state.status}"
        detail = ", ".join(
            part for part in (f"by {state.by}" if state.by else "", state.reason or "") if part
        )
        return f"{text} ({detail})" if detail else text

    def render_html(self, node: Node) -> str:
        """One line: the decision, the action, who decided and why."""
        from ._render import line

        state: ApprovalState = node.state
        return line(
            "approval",
            ("decision", state.status),
            ("action", state.action),
            ("by", f"by {state.by}" if state.by else ""),
            ("reason", state.reason),
            status=state.status,
            inline=("action", "reason"),
        )

    def render_json(self, node: Node) -> dict[str, Any]:
        """The state's fields as a dict."""
        return msgspec.structs.asdict(node.state)


DEFINITION: Final = ApprovalDefinition()
"""The approval definition to register."""
