"""The pure core: fold an append-only event log into frozen, seq-ordered nodes.

``create_conversation_engine(definitions=[...])`` registers independent per-kind
state machines (any objects with ``kind``, ``match``, ``start``, ``update``);
``push`` events, read ``nodes()``, ``subscribe`` to coalesced notifications.
No I/O, no clock, no asyncio requirement; docs/concepts.md states the rules.
``engine.testing.check_definition`` checks a definition of your own against the
contract the engine relies on.
``Cursor`` is a fold that steps back over the events it folded: what makes
switching between a conversation's branches cost only their divergent parts.

The second projection, the model context, lives in its own room,
``engine.context`` (re-exported here): generic ``Message`` values, a ``Context``
of provider-native items, ``CoopContext``, which builds the next request from
cooperating areas, and the economy (docs/context.md states its rules).
"""

from ._cursor import Cursor as Cursor
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
from ._types import ClaimRole as ClaimRole
from ._types import Definition as Definition
from ._types import Listener as Listener
from ._types import Node as Node
from ._types import Publication as Publication
from ._types import PushContext as PushContext
from ._types import PushHook as PushHook
from ._types import Reader as Reader
from ._types import Scheduler as Scheduler
from ._types import Statistics as Statistics
from .context import AreaAppend as AreaAppend
from .context import AreaError as AreaError
from .context import AreaFlowState as AreaFlowState
from .context import AreaLifeState as AreaLifeState
from .context import Collection as Collection
from .context import Compaction as Compaction
from .context import Context as Context
from .context import ContextAreaImplementation as ContextAreaImplementation
from .context import CoopContext as CoopContext
from .context import File as File
from .context import Gateway as Gateway
from .context import Image as Image
from .context import Message as Message
from .context import Native as Native
from .context import Part as Part
from .context import Reasoning as Reasoning
from .context import RenderRecord as RenderRecord
from .context import Role as Role
from .context import Text as Text
from .context import ToolCall as ToolCall
from .context import ToolResult as ToolResult

__all__ = [
    "AreaAppend",
    "AreaError",
    "AreaFlowState",
    "AreaLifeState",
    "AsyncioScheduler",
    "Claim",
    "ClaimRole",
    "Collection",
    "Compaction",
    "Context",
    "ContextAreaImplementation",
    "ConversationEngine",
    "ConversationError",
    "CoopContext",
    "Cursor",
    "Definition",
    "DefinitionError",
    "EventError",
    "File",
    "Gateway",
    "HookError",
    "Image",
    "Listener",
    "ListenerError",
    "ManualScheduler",
    "Message",
    "Native",
    "Node",
    "Part",
    "Publication",
    "PushContext",
    "PushHook",
    "Reader",
    "Reasoning",
    "Registration",
    "RegistrationError",
    "RenderRecord",
    "Role",
    "Scheduler",
    "SnapshotStream",
    "Statistics",
    "Text",
    "ToolCall",
    "ToolResult",
    "UsageError",
    "create_conversation_engine",
]

# The context economy: policies of the model context, decided purely, and compaction:
# where the next request starts after the history was summarised (engine.context).
from .context import INTERRUPTED as INTERRUPTED
from .context import Compactor as Compactor
from .context import Economist as Economist
from .context import Economized as Economized
from .context import Economy as Economy
from .context import Marks as Marks
from .context import Restart as Restart
from .context import Spill as Spill
from .context import compaction_of as compaction_of
from .context import economize as economize
from .context import is_summary as is_summary
from .context import restart as restart
from .context import since_compaction as since_compaction
from .context import spill_name as spill_name
from .context import without_compactions as without_compactions

__all__ += [
    "INTERRUPTED",
    "Compactor",
    "Economist",
    "Economized",
    "Economy",
    "Marks",
    "Restart",
    "Spill",
    "compaction_of",
    "economize",
    "is_summary",
    "restart",
    "since_compaction",
    "spill_name",
    "without_compactions",
]
