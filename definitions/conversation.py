"""The conversation as context: nodes of the view projection -> generic messages.

``conversation_messages(nodes)`` reads the node states of the built-in kinds and
of the protocol sets (``anthropic``, ``openai_chat``, ``openai_responses``,
``ai_sdk``, ``ag_ui``) and returns the conversation in log order: caller turns
(user text, tool results, denials), model turns (reasoning, text, tool calls). A
model turn of a provider set is the SDK's own final message read back by that
provider's gateway, so it goes back to the provider exactly as it was returned.
Gemini and Bedrock sets are not read yet.

``answer_unanswered(messages, answered)`` gives each call the log moved past
without a result a neutral error result, so a request made at that point is one
a provider accepts (see ``NO_RESULT``); ``calls_of(message)`` lists a model turn's
tool calls, those inside ``engine.Native`` blocks included (what pairing rules and
economy policies must keep together with their results).
"""

from __future__ import annotations

from ._conversation import NO_RESULT as NO_RESULT
from ._conversation import answer_unanswered as answer_unanswered
from ._conversation import calls_of as calls_of
from ._conversation import conversation_messages as conversation_messages

__all__ = ["NO_RESULT", "answer_unanswered", "calls_of", "conversation_messages"]
