"""Provider gateways: generic ``engine.Message`` values <-> provider request items.

One gateway per provider API, each with the same members:

- ``items(message)``: the message's native request items (``engine.Gateway``;
  pass a gateway to ``engine.Context``);
- ``request(items, model=..., tools=..., **options)``: the payload the official
  SDK's create call takes as keyword arguments (system apart where the provider
  wants it);
- ``message(output)``: the provider's response turn as a generic message, so a
  recorded turn goes back exactly as it came (reasoning signatures, encrypted
  reasoning, thought signatures, server tool blocks as ``engine.Native``);
- ``validate(request)``: every ``Problem`` the provider would refuse the request
  for: ``call-without-result``, ``unanswered-call-at-end``,
  ``result-without-call``, ``result-not-after-call``, ``duplicate-result``,
  ``reasoning-separated``, ``roles-not-alternating``, ``empty-content``,
  ``malformed``.

Crossing providers: reasoning and ``Native`` parts go back only to the provider
that made them (``provider`` is the gateway's name); elsewhere reasoning is left
out, a ``Native`` part is sent as its ``text`` and a compaction as its summary text
(``crossing`` says so, for a warning). So a conversation recorded from
one provider is a valid request for every other, never one carrying a signature
it would refuse.
"""

from __future__ import annotations

from typing import Final, TypeAlias

from ._gateway_check import Problem as Problem
from ._gateways import AnthropicGateway as AnthropicGateway
from ._gateways import GeminiGateway as GeminiGateway
from ._gateways import OpenAIChatGateway as OpenAIChatGateway
from ._gateways import OpenAIResponsesGateway as OpenAIResponsesGateway
from ._gateways import crossing as crossing

__all__ = [
    "ANTHROPIC",
    "GATEWAYS",
    "GEMINI",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "AnthropicGateway",
    "Gateway",
    "GeminiGateway",
    "OpenAIChatGateway",
    "OpenAIResponsesGateway",
    "Problem",
    "crossing",
    "gateway",
]

ANTHROPIC: Final = AnthropicGateway()
OPENAI_CHAT: Final = OpenAIChatGateway()
OPENAI_RESPONSES: Final = OpenAIResponsesGateway()
GEMINI: Final = GeminiGateway()

Gateway: TypeAlias = AnthropicGateway | OpenAIChatGateway | OpenAIResponsesGateway | GeminiGateway
"""Any of the four gateways."""

GATEWAYS: Final[dict[str, Gateway]] = {
    g.name: g for g in (ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, GEMINI)
}


def gateway(name: str) -> Gateway:
    """The gateway called ``name`` (``anthropic``, ``openai-chat``, ``openai-responses``,
    ``gemini``); ``ValueError`` naming the choices otherwise."""
    try:
        return GATEWAYS[name]
    except KeyError:
        raise ValueError(
            f"no gateway {name!r}: choose one of {', '.join(sorted(GATEWAYS))}"
        ) from None
