"""Built-in content kinds and protocol definition sets for the engine.

Each kind lives in its own module and knows nothing of the others; each protocol
set (``definitions.anthropic``, ``definitions.openai_chat``, ...) folds that
protocol's native stream events directly and declares itself by one ``PROTOCOL``,
a ``ProtocolSet`` (the contract, ``definitions._protocol``); the built-in kinds are
one too (``definitions.builtin.PROTOCOL``, with no pre-pass). ``definitions.branch``
holds the branch events (an edit, a regeneration, the choice of a version) and the
tree they make of a log. Imports only ``engine``.
"""

from ._protocol import PrePass as PrePass
from ._protocol import ProtocolSet as ProtocolSet
from ._protocol import RawEventError as RawEventError
from ._protocol import RebuildError as RebuildError
from ._routing import event_type as event_type
from ._text import StreamedText as StreamedText

__all__ = [
    "PrePass",
    "ProtocolSet",
    "RawEventError",
    "RebuildError",
    "StreamedText",
    "event_type",
]
