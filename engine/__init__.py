"""The pure core: fold an append-only event log into frozen, seq-ordered nodes.

``create_conversation_engine(definitions=[...])`` registers independent per-kind
state machines (any objects with ``kind``, ``match``, ``start``, ``update``);
``push`` events, read ``nodes()``, ``subscribe`` to coalesced notifications.
No I/O, no clock, no asyncio requirement; see DESIGN.md for the rules.
``engine.testing.check_definition`` checks a definition of your own against the
contract the engine relies on.
"""

from ._engine import ConversationEngine as ConversationEngine
from ._engine import create_conversation_engine as create_conversation_engine
from ._errors import ConversationError as ConversationError
from ._errors import DefinitionError as DefinitionError
from ._errors import EventError as EventError
from ._errors import HookError as HookError
from ._errors import ListenerError as ListenerError
from ._errors import RegistrationError as RegistrationError
from ._errors import UsageError as UsageError
from ._fold import Registration as Registration
from ._scheduler import AsyncioScheduler as AsyncioScheduler
from ._scheduler import ManualScheduler as ManualScheduler
from ._snapshots import SnapshotStream as SnapshotStream
from ._types import Claim as Claim
from ._types import Definition as Definition
from ._types import Listener as Listener
from ._types import Node as Node
from ._types import Publication as Publication
from ._types import PushContext as PushContext
from ._types import PushHook as PushHook
from ._types import Reader as Reader
from ._types import Role as Role
from ._types import Scheduler as Scheduler
from ._types import Statistics as Statistics

__all__ = [
    "AsyncioScheduler",
    "Claim",
    "ConversationEngine",
    "ConversationError",
    "Definition",
    "DefinitionError",
    "EventError",
    "HookError",
    "Listener",
    "ListenerError",
    "ManualScheduler",
    "Node",
    "Publication",
    "PushContext",
    "PushHook",
    "Reader",
    "Registration",
    "RegistrationError",
    "Role",
    "Scheduler",
    "SnapshotStream",
    "Statistics",
    "UsageError",
    "create_conversation_engine",
]
