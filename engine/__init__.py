"""The pure core: fold an append-only event log into frozen, seq-ordered nodes.

``create_conversation_engine(definitions=[...])`` registers independent per-kind
state machines (any objects with ``kind``, ``match``, ``start``, ``update``);
``push`` events, read ``nodes()``, ``subscribe`` to coalesced notifications.
No I/O, no clock, no asyncio requirement; docs/concepts.md states the rules.
``engine.testing.check_definition`` checks a definition of your own against the
contract the engine relies on.

The second projection, the model context: generic ``Message`` values, a
``Context`` of provider-native items, and ``CoopContext``, which builds the next
request from cooperating areas (docs/context.md states its rules).
"""

from ._context import AreaAppend as AreaAppend
from ._context import AreaError as AreaError
from ._context import AreaFlowState as AreaFlowState
from ._context import AreaLifeState as AreaLifeState
from ._context import Collection as Collection
from ._context import Context as Context
from ._context import ContextAreaImplementation as ContextAreaImplementation
from ._context import CoopContext as CoopContext
from ._context import Gateway as Gateway
from ._context import RenderRecord as RenderRecord
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
from ._message import File as File
from ._message import Image as Image
from ._message import Message as Message
from ._message import Native as Native
from ._message import Part as Part
from ._message import Reasoning as Reasoning
from ._message import Role as Role
from ._message import Text as Text
from ._message import ToolCall as ToolCall
from ._message import ToolResult as ToolResult
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

__all__ = [
    "AreaAppend",
    "AreaError",
    "AreaFlowState",
    "AreaLifeState",
    "AsyncioScheduler",
    "Claim",
    "ClaimRole",
    "Collection",
    "Context",
    "ContextAreaImplementation",
    "ConversationEngine",
    "ConversationError",
    "CoopContext",
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

# The context economy: policies of the model context, decided purely (engine._economy).
from ._economy import INTERRUPTED as INTERRUPTED
from ._economy import Economist as Economist
from ._economy import Economized as Economized
from ._economy import Economy as Economy
from ._economy import Marks as Marks
from ._economy import Spill as Spill
from ._economy import command_of as command_of
from ._economy import economize as economize
from ._economy import is_ephemeral as is_ephemeral
from ._economy import spill_name as spill_name

__all__ += [
    "INTERRUPTED",
    "Economist",
    "Economized",
    "Economy",
    "Marks",
    "Spill",
    "command_of",
    "economize",
    "is_ephemeral",
    "spill_name",
]
