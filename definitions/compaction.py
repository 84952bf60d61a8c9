"""The ``compaction`` kind: the history up to here was replaced by a summary.

Event vocabulary (``type`` is the tag; ``id`` names the compaction)::

    {"type": "compaction.mark", "id": "k1", "summary": "The user asked ...",
     "through": "tool_call:c7", "trigger": "auto",
     "tokens_before": 155000, "tokens_after": 12000, "duration_ms": 41000}
    {"type": "compaction.mark", "id": "k2", "summary": "Earlier conversation summarized.",
     "provider": "anthropic",
     "item": {"type": "compaction", "content": "...", "encrypted_content": "Ep..."}}
    {"type": "compaction.mark", "id": "k3", "provider": "openai-responses",
     "item": {"type": "compaction", "encrypted_content": "gAAA..."},
     "preserved": [{"role": "user", "text": "fix the flaky test"}]}

One event is the whole fact, and it is final (a second mark for the same id is
an error). A harness, an API or the application itself summarised the history
and went on from the summary; the log keeps everything before it, and so does
the view. The fields:

- ``through``: the key (``kind:id``) of the last node the compaction replaces;
  ``None`` replaces every node before the mark. Nodes after ``through`` (and
  before the mark) were kept verbatim: Claude Code's preserved segment, or the
  tail an application left out of its summary.
- ``keep``: keys of nodes before ``through`` that the compaction did *not*
  replace (OpenHands keeps the first events of a run).
- ``summary``: the summary's text, as far as it is known (an encrypted item may
  carry none).
- ``provider`` and ``item``: the provider's own compaction item (an Anthropic
  ``compaction`` block, a Responses ``compaction`` item), opaque, sent back
  verbatim to that provider. Another provider gets the summary text.
- ``preserved``: messages the harness re-sent verbatim that are not nodes of
  the log (Codex's ``replacement_history`` user turns), each ``{"role", "text"}``,
  sent before the summary.
- the numbers, each ``None`` when not recorded: ``trigger`` (``"auto"`` or
  ``"manual"``), ``tokens_before`` / ``tokens_after``, ``duration_ms``,
  ``messages`` (how many messages it summarised).
- ``cleared``: tool call ids whose results were cleared without a summary
  (Claude Code's microcompaction), and ``placeholder`` the text the harness sent
  in place of each (Claude Code's ``[Old tool result content cleared]``, the
  default). Such a mark restarts the request with the whole history as it stood,
  those results sent as the placeholder; the log and the view keep them whole.

The model context (``definitions.conversation``) starts the next request at the
latest compaction: the system prompt, the kept nodes, the preserved messages,
the summary, then what followed (after a clearing mark: the history with the
cleared results as the placeholder).
"""

from __future__ import annotations

from html import escape
from typing import Any, Final, Literal, TypeAlias

import msgspec

from engine import Node, Reader

from ._render import folded, markdown
from ._vocabulary import Vocabulary

__all__ = [
    "CLEARED",
    "DEFINITION",
    "CompactionDefinition",
    "CompactionState",
    "Event",
    "Mark",
    "Preserved",
    "numbers",
    "pass_tokens",
    "row_html",
    "row_text",
]

Trigger: TypeAlias = Literal["auto", "manual"]

CLEARED: Final = "[Old tool result content cleared]"
"""What Claude Code sends in place of a tool result its microcompaction cleared
(``TIME_BASED_MC_CLEARED_MESSAGE`` in its ``microCompact``): a mark's default
``placeholder``."""


class Preserved(msgspec.Struct, frozen=True):
    """A message the compaction carried over verbatim: its ``role`` and ``text``."""

    role: Literal["user", "assistant", "system"]
    text: str


class CompactionState(msgspec.Struct, frozen=True, kw_only=True):
    """A compaction node's state: the mark's fields (without its ``id``)."""

    summary: str = ""
    through: str | None = None
    keep: tuple[str, ...] = ()
    provider: str = ""
    item: dict[str, Any] | None = None
    preserved: tuple[Preserved, ...] = ()
    trigger: Trigger | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    duration_ms: int | None = None
    messages: int | None = None
    cleared: tuple[str, ...] = ()
    placeholder: str = CLEARED

    @property
    def clears(self) -> bool:
        """Whether the compaction only cleared tool results (``cleared``, no summary,
        no item): the next request keeps the history, those results replaced."""
        return bool(self.cleared) and not self.summary and self.item is None


class Mark(CompactionState, frozen=True, kw_only=True, tag_field="type", tag="compaction.mark"):
    """The history through node ``through`` was replaced by ``summary`` (see module)."""

    id: str


Event: TypeAlias = Mark
"""The compaction event, for typed decoding: ``msgspec.json.Decoder(compaction.Event)``."""

_VOCABULARY: Final = Vocabulary(Mark, opens="compaction.mark")


_typed: Final = _VOCABULARY.typed


def numbers(state: CompactionState) -> str:
    """The compaction's figures on one line: ``auto, 155,000 -> 12,000 tokens, 41.0 s``."""
    parts: list[str] = []
    if state.trigger:
        parts.append(state.trigger)
    before, after = state.tokens_before, state.tokens_after
    if before is not None and after is not None:
        parts.append(f"{before:,} -> {after:,} tokens")
    elif before is not None:
        parts.append(f"{before:,} tokens before")
    elif after is not None:
        parts.append(f"{after:,} tokens after")
    if state.messages is not None:
        parts.append(f"{state.messages:,} messages")
    if state.cleared:
        parts.append(f"{len(state.cleared):,} tool results cleared")
    if state.duration_ms is not None:
        parts.append(f"{state.duration_ms / 1000:.1f} s")
    if state.item is not None and not state.summary:
        parts.append(f"opaque {state.provider or 'provider'} item")
    return ", ".join(parts)


def pass_tokens(usage: object) -> str:
    """A provider's compaction pass, from its own usage object (an Anthropic
    ``compaction`` iteration, a ``/responses/compact`` response's ``usage``):
    ``read 60,385 tokens, wrote 522``, or ``""`` when it holds no counts. Its input
    is what the pass read, not the size of the context it closed (the SDKs say
    not to take it for that), so it is not ``tokens_before``."""
    if not isinstance(usage, dict):
        return ""
    read, wrote = usage.get("input_tokens"), usage.get("output_tokens")
    if not isinstance(read, int) or not isinstance(wrote, int):
        return ""
    return f"read {read:,} tokens, wrote {wrote:,}"


def row_text(summary: str, figures: str) -> str:
    """A compaction as one terminal row (the protocol sets' compaction items too)."""
    head = f"compaction ({figures})" if figures else "compaction"
    return f"{head}: {summary}" if summary else head


def row_html(summary: str, figures: str) -> str:
    """A compaction as one folded HTML row: ``figures`` on its summary line, the
    ``summary`` (Markdown, escaped) inside (the protocol sets' compaction items too)."""
    head = f"compaction: {figures}" if figures else "compaction"
    return folded(head, markdown(summary) if summary else "", cls="compaction")


def _cleared_text(state: CompactionState) -> str:
    """A clearing compaction's calls, as the row's text."""
    if not state.clears:
        return ""
    return f"results of {', '.join(state.cleared)} sent as {state.placeholder!r} from here on"


def _cleared_html(state: CompactionState) -> str:
    """A clearing compaction's calls as links to their rows (``tool_call:<id>``)."""
    links = ", ".join(
        f'<a href="#tool_call:{escape(call, quote=True)}">{escape(call)}</a>'
        for call in state.cleared
    )
    said = escape(state.placeholder)
    return f'<p class="cleared">results of {links} sent as <code>{said}</code> from here on</p>'


class CompactionDefinition:
    """Folds ``compaction.mark`` events into ``CompactionState`` nodes keyed by id."""

    kind: Final = "compaction"
    event_types: Final = frozenset(_VOCABULARY.structs)
    publication: Final = "immediate"

    # Claim by ``id``; the mark opens the node (a second mark reopens it: rule 4).
    match: Final = staticmethod(_VOCABULARY.claim)

    def start(self, event: Event | dict[str, Any], reader: Reader) -> CompactionState:
        """The compaction as marked."""
        typed = _typed(event)
        assert isinstance(typed, Mark)
        fields = msgspec.structs.asdict(typed)
        del fields["id"]
        return CompactionState(**fields)

    def update(self, state: CompactionState, event: Event | dict[str, Any]) -> CompactionState:
        """A compaction is final: nothing updates it."""
        raise ValueError(f"a compaction is final: cannot update it with {_typed(event)!r}")

    def render_text(self, node: Node) -> str:
        """``compaction (auto, 155,000 -> 12,000 tokens): summary``; a clearing one
        names the calls whose results the next request sends as its placeholder."""
        state: CompactionState = node.state
        return row_text(state.summary or _cleared_text(state), numbers(state))

    def render_html(self, node: Node) -> str:
        """One folded row: the figures on its summary line, the summary inside (a
        clearing one: the cleared calls, each a link to its row, which keeps the
        result whole)."""
        state: CompactionState = node.state
        if state.clears:
            return folded(f"compaction: {numbers(state)}", _cleared_html(state), cls="compaction")
        return row_html(state.summary, numbers(state))

    def render_json(self, node: Node) -> dict[str, Any]:
        """The state's fields as a dict."""
        return msgspec.to_builtins(node.state)  # type: ignore[no-any-return]


DEFINITION: Final = CompactionDefinition()
"""The compaction definition to register."""
