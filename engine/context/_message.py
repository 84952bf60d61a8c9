"""Generic messages: what context areas return and what gateways convert.

A ``Message`` is one turn, provider-neutral: a ``Role`` and either plain text or a
tuple of parts. The parts are frozen msgspec Structs in one tagged union
(``Part``), so a message encodes to JSON and back unchanged (prompt replay records
them in the log). A tool result is a part of a *user* turn, as in Anthropic's
Messages API; gateways of providers with a separate tool role split it out.

Reasoning carries what a provider needs to accept its own reasoning back, opaque:
Anthropic's ``thinking`` with its ``signature`` and ``redacted_thinking``
(``encrypted``), OpenAI's reasoning items (``id``, ``encrypted``), Gemini's thought
signatures (``signature``). ``provider`` says whose state it is, so a gateway of
another provider can leave it out instead of sending what would be refused.
Provider tags are the gateway names: ``"anthropic"``, ``"openai-chat"``,
``"openai-responses"``, ``"gemini"``. A block no generic part carries (a server
tool call and its result, a text with citations) is a ``Native`` part: sent back
unchanged to its provider, seen by the others as its ``text`` (or not at all).
"""

from __future__ import annotations

import enum
from typing import TypeAlias

import msgspec

__all__ = [
    "Compaction",
    "File",
    "Image",
    "Message",
    "Native",
    "Part",
    "Reasoning",
    "Role",
    "Text",
    "ToolCall",
    "ToolResult",
]


class Role(enum.StrEnum):
    """Who speaks a message: ``system``, ``user`` (tool results included) or ``assistant``."""

    system = "system"
    user = "user"
    assistant = "assistant"


class Text(msgspec.Struct, frozen=True, tag="text"):
    """Plain text. ``id`` keeps a provider's item id (OpenAI Responses ``msg_...``)."""

    text: str
    id: str | None = None


class Reasoning(msgspec.Struct, frozen=True, tag="reasoning"):
    """Model reasoning, with the provider state that lets it be sent back.

    ``text`` is the readable thinking (Anthropic ``thinking``, one OpenAI summary
    part, a Gemini thought). ``provider`` (``"anthropic"``, ``"openai"``,
    ``"gemini"``; ``""`` for reasoning no provider signed) names whose state
    ``signature`` (Anthropic thinking signature, Gemini ``thoughtSignature``),
    ``encrypted`` (Anthropic ``redacted_thinking`` data, OpenAI
    ``encrypted_content``) and ``id`` (OpenAI reasoning item id) are. Several
    consecutive parts sharing one OpenAI ``id`` are the summary parts of one item.
    A Gemini part with empty ``text`` and a ``signature`` is the signature the
    provider put on the part that follows it (a function call or text).
    """

    text: str = ""
    provider: str = ""
    signature: str | None = None
    encrypted: str | None = None
    id: str | None = None


class ToolCall(msgspec.Struct, frozen=True, tag="tool_call"):
    """A call the model asked for: ``arguments`` is the JSON text, as the model wrote it.

    ``id`` is the call id its ``ToolResult`` names; ``item_id`` keeps a provider's
    separate item id (OpenAI Responses ``fc_...``).
    """

    id: str
    name: str
    arguments: str = "{}"
    item_id: str | None = None


class Image(msgspec.Struct, frozen=True, tag="image"):
    """An image, inline (``data``: base64) or by reference (``url``)."""

    media_type: str
    data: str | None = None
    url: str | None = None


class File(msgspec.Struct, frozen=True, tag="file"):
    """A file (a PDF, a text document), inline (``data``: base64) or by ``url``."""

    media_type: str
    data: str | None = None
    url: str | None = None
    name: str | None = None


class ToolResult(msgspec.Struct, frozen=True, tag="tool_result"):
    """The answer to the ``ToolCall`` whose id is ``call_id``; part of a user turn.

    ``is_error`` marks a failed call; ``denied`` marks a call the person refused
    (the approval kind's decision): a structural marker economy policies rely on,
    sent to providers as an error result. ``name`` is the tool's name, which
    Gemini's ``functionResponse`` requires (the others match by ``call_id``).
    """

    call_id: str
    content: str | tuple[Text | Image | File, ...] = ""
    is_error: bool = False
    denied: bool = False
    name: str | None = None


class Native(msgspec.Struct, frozen=True, tag="native"):
    """A provider-native block kept verbatim: ``data`` is its JSON text.

    The gateway named ``provider`` sends it back unchanged. Any other gateway sends
    ``call`` when the block is a tool call with fields no ``ToolCall`` carries (an
    Anthropic ``tool_use`` with its ``caller``), so the call and its result still
    pair; else ``text`` as plain text; else nothing.
    """

    provider: str
    data: str
    text: str = ""
    call: ToolCall | None = None


class Compaction(msgspec.Struct, frozen=True, tag="compaction"):
    """Where a compaction restarts the conversation: the summary the model gets
    instead of the history before it.

    ``text`` is the summary as far as it is known; ``provider`` and ``data`` (JSON
    text) the provider's own compaction item (an Anthropic ``compaction`` block, a
    Responses ``compaction`` item), sent back verbatim to that provider only: any
    other gets ``text`` as plain text. ``carried`` counts the messages right before
    this one that the compaction carried over (Codex's preserved user turns): the
    restarted conversation begins with them. ``echo`` counts the messages right
    after it that repeat history the compaction kept verbatim (what followed the
    last message it replaced). See ``since_compaction``.
    """

    text: str = ""
    provider: str = ""
    data: str | None = None
    carried: int = 0
    echo: int = 0


Part: TypeAlias = Text | Reasoning | ToolCall | ToolResult | Image | File | Native | Compaction


class Message(msgspec.Struct, frozen=True):
    """One provider-neutral turn: ``Message(role=Role.user, content="...")``.

    ``content`` is a ``str`` or a tuple of parts (``Text``, ``Reasoning``,
    ``ToolCall``, ``ToolResult``, ``Image``, ``File``, ``Native``, ``Compaction``).
    Frozen and comparable by value; encodes to JSON with ``msgspec.json.encode``.
    """

    role: Role
    content: str | tuple[Part, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.role, Role):
            raise TypeError(
                f"Message role must be a Role (Role.system, Role.user, Role.assistant), "
                f"not {self.role!r}"
            )
        if not isinstance(self.content, str | tuple):
            raise TypeError(
                f"Message content must be a str or a tuple of parts, not "
                f"{type(self.content).__name__}: pass tuple(parts)"
            )

    @property
    def parts(self) -> tuple[Part, ...]:
        """The content as parts: a plain string is one ``Text`` (none when empty)."""
        if isinstance(self.content, str):
            return (Text(self.content),) if self.content else ()
        return self.content
