"""The model context: the second projection of the log, the request for the next
model call (docs/context.md states its rules, numbered in their own page).

- ``Message`` and its parts: the generic, provider-neutral conversation a gateway
  turns into a provider's items.
- ``Context`` and ``CoopContext``: an append-only list of provider-native items,
  built at safepoints from cooperating areas (seed 000).
- Compaction (``Compaction``, ``since_compaction``): where the next request starts
  after the history was summarised.
- The economy (``economize``, ``Economist``): policies that decide what of the
  conversation the model gets, never edits of the log (seed 004).

Pure like the fold beside it: no I/O, no clock. It may import only ``engine``'s
errors; the fold never imports it.
"""

from ._compaction import Compactor as Compactor
from ._compaction import Restart as Restart
from ._compaction import compaction_of as compaction_of
from ._compaction import is_summary as is_summary
from ._compaction import restart as restart
from ._compaction import since_compaction as since_compaction
from ._compaction import without_compactions as without_compactions
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
from ._economy import INTERRUPTED as INTERRUPTED
from ._economy import Economist as Economist
from ._economy import Economized as Economized
from ._economy import Economy as Economy
from ._economy import Marks as Marks
from ._economy import Spill as Spill
from ._economy import economize as economize
from ._economy import spill_name as spill_name
from ._message import Compaction as Compaction
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

__all__ = [
    "INTERRUPTED",
    "AreaAppend",
    "AreaError",
    "AreaFlowState",
    "AreaLifeState",
    "Collection",
    "Compaction",
    "Compactor",
    "Context",
    "ContextAreaImplementation",
    "CoopContext",
    "Economist",
    "Economized",
    "Economy",
    "File",
    "Gateway",
    "Image",
    "Marks",
    "Message",
    "Native",
    "Part",
    "Reasoning",
    "RenderRecord",
    "Restart",
    "Role",
    "Spill",
    "Text",
    "ToolCall",
    "ToolResult",
    "compaction_of",
    "economize",
    "is_summary",
    "restart",
    "since_compaction",
    "spill_name",
    "without_compactions",
]
