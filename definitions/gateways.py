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
  ``tools-undeclared``, ``malformed``.

Beside the conversation a request carries a model, tools, a tool choice and
settings: ``carry`` takes them from a recorded request into any provider's shape,
naming what the target has no place for (``Carried.notes``; see
``definitions._settings``).

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
from ._gateways import BedrockGateway as BedrockGateway
from ._gateways import GeminiGateway as GeminiGateway
from ._gateways import OpenAIChatGateway as OpenAIChatGateway
from ._gateways import OpenAIResponsesGateway as OpenAIResponsesGateway
from ._gateways import crossing as crossing
from ._settings import Carried as Carried
from ._settings import Settings as Settings
from ._settings import Tool as Tool
from ._settings import carry as carry
from ._settings import declared as declared
from ._settings import read_settings as read_settings

__all__ = [
    "ANTHROPIC",
    "BEDROCK",
    "GATEWAYS",
    "GEMINI",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "AnthropicGateway",
    "BedrockGateway",
    "Carried",
    "Gateway",
    "GeminiGateway",
    "OpenAIChatGateway",
    "OpenAIResponsesGateway",
    "Problem",
    "Settings",
    "Tool",
    "carry",
    "crossing",
    "declared",
    "gateway",
    "read_settings",
]

ANTHROPIC: Final = AnthropicGateway()
OPENAI_CHAT: Final = OpenAIChatGateway()
OPENAI_RESPONSES: Final = OpenAIResponsesGateway()
GEMINI: Final = GeminiGateway()
BEDROCK: Final = BedrockGateway()

Gateway: TypeAlias = (
    AnthropicGateway | OpenAIChatGateway | OpenAIResponsesGateway | GeminiGateway | BedrockGateway
)
"""Any of the five gateways."""

GATEWAYS: Final[dict[str, Gateway]] = {
    g.name: g for g in (ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, GEMINI, BEDROCK)
}


def gateway(name: str) -> Gateway:
    """The gateway called ``name`` (``anthropic``, ``openai-chat``, ``openai-responses``,
    ``gemini``, ``bedrock``); ``ValueError`` naming the choices otherwise."""
    try:
        return GATEWAYS[name]
    except KeyError:
        raise ValueError(
            f"no gateway {name!r}: choose one of {', '.join(sorted(GATEWAYS))}"
        ) from None
