"""Gemini ``streamGenerateContent``: fold ``GenerateContentResponse`` chunks.

Theory of operation
-------------------
Each chunk is a whole ``GenerateContentResponse`` holding only what is new::

    {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]},
                     "index": 0}],
     "usageMetadata": {...}, "modelVersion": "...", "responseId": "..."}

as the REST API streams it (SSE ``data:`` frames with ``alt=sse``, else one JSON
array), as recordings hold it (JSON Lines), or as the ``google-genai`` SDK yields it
(typed objects, accepted by their shape: see ``as_chunk``). The rebuild is the
response a non-streaming ``generateContent`` call gives:

- top-level fields (``usageMetadata``, ``modelVersion``, ``promptFeedback``, ...):
  the last value sent wins. ``usageMetadata`` is cumulative, so it is replaced,
  never summed;
- candidates are kept by ``index`` (absent: 0), several side by side; their other
  fields (``finishReason``, ``safetyRatings``, ``citationMetadata``, ...) last wins;
- text parts: a text part continues the candidate's last part when that is text of
  the same kind (``thought`` or not) with no ``thoughtSignature`` yet; a signature
  ends the part it arrives on (an empty text part carrying one, as Gemini 3 sends
  last, signs the text before it). An empty text part with no signature adds
  nothing (the final chunk's carrier of ``finishReason``). Signatures are kept as
  sent, byte for byte;
- function calls: a ``functionCall`` with ``name`` and ``args`` (or with no
  ``willContinue``) is a whole call, its ``id`` kept when sent. Gemini 3 streams
  arguments instead: ``{name, willContinue: true}`` opens a call, parts of
  ``partialArgs`` (``jsonPath`` + ``stringValue`` / ``numberValue`` / ``boolValue`` /
  ``nullValue``; a string is continued while its ``willContinue`` is true) fill the
  innermost open call, and it closes on an empty ``functionCall {}`` or a part whose
  arguments no longer continue (``{willContinue: true}`` alone changes nothing).
  The rebuilt call holds ``args`` built from them (the rules of the AI SDK's
  ``GoogleJSONAccumulator``), never ``partialArgs``;
- any other part (``inlineData``, ``executableCode``, ...) is kept as it came.

The pre-pass ``prepare(events)`` names each chunk's response: a chunk whose
``responseId`` differs from the current one opens the next response; a chunk with
none joins the current one. One definition, ``gemini_response`` (node id
``"response-<n>"``), holds everything; ``responses(nodes)`` rebuilds them.

Where the AI SDK's provider differs (tests/conformance/test_gemini.py names each):
it reads only ``candidates[0]`` of a chunk, and drops a signature that arrives on an
empty part after thoughts; ours keeps every candidate and every signature.

The set is declared by ``PROTOCOL`` (``definitions.ProtocolSet``). Live use: push
what ``client.models.generate_content_stream(...)`` yields into ``PROTOCOL.engine()``;
by hand, ``engine.push_many(prepare(chunks))`` (or one ``Preparer`` per stream), routed
with ``event_type=gemini.event_type``.
"""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import msgspec

from engine import Claim, Node

from ._cons import Cons, items
from ._protocol import ProtocolSet, old_names
from ._text import StreamedText

__all__ = [
    "DEFINITIONS",
    "PROTOCOL",
    "CandidateState",
    "Envelope",
    "PartState",
    "Preparer",
    "ResponseDefinition",
    "ResponseState",
    "as_chunk",
    "build_args",
    "detect",
    "event_type",
    "prepare",
    "responses",
]

_EMPTY = StreamedText()
_replace: Final = msgspec.structs.replace
_MISSING: Final = object()


# -- typed chunks ---------------------------------------------------------------------


def _signature(value: Any) -> Any:
    # google-genai decodes thoughtSignature to bytes; the wire form is standard base64.
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    return value


# pydantic's JSON mode writes bytes as URL-safe base64 (google-genai's models say
# ser_json_bytes="base64"): "-" and "_" for the "+" and "/" the API sent. The exact
# inverse, since standard base64 has neither character.
def _standard(text: str) -> str:
    """URL-safe base64 as standard base64 (``str.replace`` twice: a signature is
    kilobytes long, and ``str.translate`` maps it a character at a time, 6x slower)."""
    return text.replace("-", "+").replace("_", "/")


# Fields google-genai adds to a response that the API did not send.
_SDK_ONLY: Final = ("sdkHttpResponse", "automaticFunctionCallingHistory", "parsed")


def _standard_bytes(chunk: dict[str, Any]) -> None:
    """Put the bytes of ``chunk``'s parts (signatures, inline data) back in the API's
    standard base64, in place."""
    for candidate in chunk.get("candidates") or ():
        for part in (candidate.get("content") or {}).get("parts") or ():
            signature = part.get("thoughtSignature")
            if signature is not None:
                part["thoughtSignature"] = _standard(signature)
            inline = part.get("inlineData")
            if inline is not None and inline.get("data") is not None:
                inline["data"] = _standard(inline["data"])


def as_chunk(event: Any) -> dict[str, Any]:
    """``event`` as the JSON chunk the API sent: a dict as it is; google-genai's typed
    ``GenerateContentResponse`` (a pydantic model with ``candidates``, taken by its
    shape) dumped by its camelCase aliases, its bytes (``thought_signature``,
    inline data) in standard base64 as sent (pydantic writes URL-safe base64, another
    string). Anything else goes to ``PROTOCOL.plain``: a ``TypeError`` naming it and
    the fix."""
    if type(event) is dict:
        return event
    dump = getattr(event, "model_dump", None)
    if callable(dump) and hasattr(event, "candidates") and not isinstance(event, type):
        chunk: dict[str, Any] = dump(mode="json", by_alias=True, exclude_none=True)
        for name in _SDK_ONLY:
            chunk.pop(name, None)
        _standard_bytes(chunk)
        return chunk
    return PROTOCOL.as_dict(event)


# -- the pre-pass ---------------------------------------------------------------------


class Envelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A chunk, the node id of its response, and the claim ``match`` returns."""

    response: str
    chunk: dict[str, Any]
    claim: Claim


class Preparer:
    """Names the response of each chunk of one stream, in order (see ``prepare``)."""

    __slots__ = ("_count", "_id", "_update")

    def __init__(self) -> None:
        self._count = 0
        self._id: Any = _MISSING  # the current response's responseId
        self._update: Claim | None = None

    def __call__(self, event: Any) -> Envelope:
        """Wrap ``event`` (a dict or a typed chunk, see ``as_chunk``); a new
        ``responseId`` (or the first chunk) opens a response."""
        chunk = event if type(event) is dict else as_chunk(event)
        if "type" in chunk or "choices" in chunk:
            raise ValueError(
                f"not a GenerateContentResponse chunk (keys {sorted(chunk)[:6]!r}): an event "
                "of another protocol? Push it into the protocol set of its own SDK"
            )
        response_id = chunk.get("responseId")
        update = self._update
        if update is None or (response_id is not None and response_id != self._id):
            self._count += 1
            self._id = response_id
            node = f"response-{self._count}"
            self._update = Claim(node, "update")
            return Envelope(node, chunk, Claim(node, "start"))
        return Envelope(update.id, chunk, update)


def prepare(events: Iterable[Any]) -> Iterator[Envelope]:
    """Wrap each chunk of one stream in ``Envelope`` (the pure pre-pass): ``Preparer`` over
    the stream, counted (``PROTOCOL.pre_pass()``), so that a chunk it cannot read is
    an ``engine.EventError`` naming its position."""
    return PROTOCOL.mapped(events)


# The envelope's class: ``type`` itself, a C call with no Python frame per event.
event_type: Final = type
"""Routing key for ``create_conversation_engine(event_type=...)``: the envelope's
class. A raw dict chunk (pushed without the pre-pass) reaches ``match``, which raises
a ``TypeError`` naming the fix."""

_FIELDS: Final = frozenset({"candidates", "usageMetadata", "promptFeedback"})


def detect(event: Mapping[str, Any]) -> bool:
    """Whether a plain event dict is a ``GenerateContentResponse`` chunk (it carries no
    ``type``: its ``candidates``, ``usageMetadata`` or ``promptFeedback``)."""
    return not isinstance(event.get("type"), str) and not _FIELDS.isdisjoint(event)


# -- states ---------------------------------------------------------------------------


class PartState(msgspec.Struct, frozen=True, gc=False):
    """One part of a candidate's content."""

    kind: str  # "text", "functionCall", or the key of another part ("inlineData", ...)
    thought: bool = False
    text: StreamedText = _EMPTY
    signature: Any = None  # thoughtSignature, as sent
    call: tuple[tuple[str, Any], ...] = ()  # functionCall fields (name, id, args, ...)
    partial: Cons = None  # streamed partialArgs entries, newest first
    streamed: bool = False  # a call whose arguments came as partialArgs
    streaming: bool = False  # a streamed call still open
    value: Any = None  # another part, as it came
    extra: tuple[tuple[str, Any], ...] = ()  # other fields of the part, first seen


class CandidateState(msgspec.Struct, frozen=True, gc=False):
    """One candidate: its parts and its other fields (last value wins)."""

    index: int
    role: Any = None
    parts: tuple[PartState, ...] = ()
    fields: tuple[tuple[str, Any], ...] = ()
    open: tuple[int, ...] = ()  # positions of open streamed calls, innermost last


class ResponseState(msgspec.Struct, frozen=True, gc=False):
    """One response: its top-level fields (last value wins) and candidates."""

    fields: tuple[tuple[str, Any], ...] = ()
    candidates: tuple[CandidateState, ...] = ()


# -- the fold -------------------------------------------------------------------------

_PART_KEYS: Final = frozenset({"text", "thought", "thoughtSignature"})


def _text_part(parts: tuple[PartState, ...], part: dict[str, Any]) -> tuple[PartState, ...]:
    text = part["text"]
    if type(text) is not str:
        raise ValueError(f"a text part's text must be a string, got {text!r}")
    thought = part.get("thought") is True
    signature = part.get("thoughtSignature")
    if parts:
        last = parts[-1]
        if last.kind == "text" and last.thought == thought and last.signature is None:
            new = _replace(last, text=last.text.append(text)) if text else last
            if signature is not None:
                new = _replace(new, signature=signature)
            return (*parts[:-1], new)
    if not text and signature is None:
        return parts  # an empty carrier (of finishReason): nothing to show
    extra = tuple((k, v) for k, v in part.items() if k not in _PART_KEYS)
    return (*parts, PartState("text", thought, StreamedText(text), signature, extra=extra))


def _call_part(
    candidate: CandidateState, part: dict[str, Any], call: dict[str, Any]
) -> CandidateState:
    parts, open_ = candidate.parts, candidate.open
    signature = part.get("thoughtSignature")
    name = call.get("name")
    partial = call.get("partialArgs")
    continues = call.get("willContinue") is True
    if partial is not None and type(partial) is not list:
        raise ValueError(f"functionCall.partialArgs must be a list, got {partial!r}")
    if name is not None and (continues or partial is not None):  # a streamed call opens
        fields = tuple((k, v) for k, v in call.items() if k not in ("partialArgs", "willContinue"))
        extra = tuple((k, v) for k, v in part.items() if k not in ("functionCall", *_PART_KEYS))
        new = PartState(
            "functionCall", signature=signature, call=fields, streamed=True, extra=extra
        )
        parts, open_ = (*parts, new), (*open_, len(parts))
        if partial is not None:
            parts, open_ = _partial(parts, open_, partial, continues)
        return _replace(candidate, parts=parts, open=open_)
    if name is None and partial is not None:  # more arguments of the innermost open call
        if not open_:
            return candidate  # no call to continue (a window cut mid-call): dropped
        if signature is not None:
            at = open_[-1]
            if parts[at].signature is None:
                parts = (*parts[:at], _replace(parts[at], signature=signature), *parts[at + 1 :])
        parts, open_ = _partial(parts, open_, partial, continues)
        return _replace(candidate, parts=parts, open=open_)
    if name is None and "args" not in call:
        # {} ends the innermost streamed call; {willContinue: true} only says it goes on
        if open_ and not continues:
            at = open_[-1]
            parts = (*parts[:at], _replace(parts[at], streaming=False), *parts[at + 1 :])
            open_ = open_[:-1]
        return _replace(candidate, parts=parts, open=open_)
    # a whole call (with or without args, with or without an id)
    fields = tuple((k, v) for k, v in call.items() if k != "willContinue")
    extra = tuple((k, v) for k, v in part.items() if k not in ("functionCall", *_PART_KEYS))
    new = PartState("functionCall", signature=signature, call=fields, extra=extra)
    return _replace(candidate, parts=(*parts, new))


def _partial(
    parts: tuple[PartState, ...], open_: tuple[int, ...], partial: list[Any], continues: bool
) -> tuple[tuple[PartState, ...], tuple[int, ...]]:
    at = open_[-1]
    state = parts[at]
    cons = state.partial
    for arg in partial:
        if type(arg) is not dict or type(arg.get("jsonPath")) is not str:
            raise ValueError(f"a partialArgs entry needs a 'jsonPath' string, got {arg!r}")
        cons = (arg, cons)
    ends = not continues and all(arg.get("willContinue") is not True for arg in partial)
    state = _replace(state, partial=cons, streaming=not ends)
    parts = (*parts[:at], state, *parts[at + 1 :])
    return parts, open_[:-1] if ends else open_


def _candidate(state: CandidateState, raw: dict[str, Any]) -> CandidateState:
    content = raw.get("content")
    fields = state.fields
    others = [(k, v) for k, v in raw.items() if k not in ("content", "index")]
    if others:
        merged = dict(fields)
        merged.update(others)
        fields = tuple(merged.items())
    state = _replace(state, fields=fields)
    if content is None:
        return state
    if type(content) is not dict:
        raise ValueError(f"a candidate's content must be an object, got {content!r}")
    if state.role is None and content.get("role") is not None:
        state = _replace(state, role=content["role"])
    for part in content.get("parts") or ():
        if type(part) is not dict:
            raise ValueError(f"a content part must be an object, got {part!r}")
        if "text" in part:
            state = _replace(state, parts=_text_part(state.parts, part))
        elif "functionCall" in part:
            call = part["functionCall"]
            if type(call) is not dict:
                raise ValueError(f"functionCall must be an object, got {call!r}")
            state = _call_part(state, part, call)
        else:
            kind = next((k for k in part if k not in _PART_KEYS), "part")
            thought = part.get("thought") is True
            new = PartState(kind, thought, signature=part.get("thoughtSignature"), value=part)
            state = _replace(state, parts=(*state.parts, new))
    return state


def _fold(state: ResponseState, chunk: dict[str, Any]) -> ResponseState:
    fields = state.fields
    others = [(k, v) for k, v in chunk.items() if k != "candidates"]
    if others:
        merged = dict(fields)
        merged.update(others)
        fields = tuple(merged.items())
    candidates = state.candidates
    raw_candidates = chunk.get("candidates")
    if raw_candidates is not None and type(raw_candidates) is not list:
        raise ValueError(f"candidates must be a list, got {raw_candidates!r}")
    for raw in raw_candidates or ():
        if type(raw) is not dict:
            raise ValueError(f"a candidate must be an object, got {raw!r}")
        index = raw.get("index", 0)
        if type(index) is not int:
            raise ValueError(f"a candidate's index must be an int, got {index!r}")
        for at, old in enumerate(candidates):
            if old.index == index:
                candidates = (*candidates[:at], _candidate(old, raw), *candidates[at + 1 :])
                break
        else:
            candidates = (*candidates, _candidate(CandidateState(index), raw))
    return ResponseState(fields, candidates)


class ResponseDefinition:
    """Kind ``gemini_response``: one node per response (see ``prepare``)."""

    kind = "gemini_response"
    # fallback: an envelope of a class built by hand (a raw event goes to the guard)
    event_types = frozenset({Envelope})
    fallback = True
    publication = "animation-frame"

    def match(self, event: Envelope) -> Claim | None:
        """The claim ``prepare`` made (start on a response's first chunk)."""
        return event.claim

    def start(self, event: Envelope, reader: object) -> ResponseState:
        """A response opened by its first chunk."""
        return _fold(ResponseState(), event.chunk)

    def update(self, state: ResponseState, event: Envelope) -> ResponseState:
        """Fold one more chunk."""
        return _fold(state, event.chunk)

    def render_text(self, node: Node) -> str:
        """The heading (model, finish), then each candidate's text, thoughts and calls
        (labelled when several)."""
        from ._render_protocols import gemini_text

        return gemini_text(_response(node.state))

    def render_html(self, node: Node) -> str:
        """The metadata row, then text as bubbles, thoughts folded, calls as cards."""
        from ._render_protocols import gemini_html

        return gemini_html(_response(node.state))

    def tool_calls(self, node: Node) -> list[str]:
        """The ids of the response's function calls."""
        from ._render_protocols import gemini_calls

        return gemini_calls(_response(node.state))


RESPONSE: Final = ResponseDefinition()


# -- rebuild --------------------------------------------------------------------------

_SEGMENT: Final = re.compile(r"\[(\d+)\]")


def _path(raw: str) -> list[str | int]:
    segments: list[str | int] = []
    for piece in raw.split("."):
        bracket = piece.find("[")
        if bracket == -1:
            segments.append(piece)
            continue
        if bracket > 0:
            segments.append(piece[:bracket])
        segments.extend(int(m) for m in _SEGMENT.findall(piece))
    return segments


def _get(root: Any, segments: list[str | int]) -> Any:
    current = root
    for seg in segments:
        in_dict = isinstance(current, dict) and type(seg) is str and seg in current
        if not in_dict and not (isinstance(current, list) and type(seg) is int):
            return _MISSING
        if not in_dict and seg >= len(current):  # type: ignore[operator]
            return _MISSING
        current = current[seg]
    return current


def _set(root: dict[str, Any], segments: list[str | int], value: Any) -> None:
    current: Any = root
    for seg, following in itertools.pairwise(segments):
        child = _get(current, [seg])
        if child is _MISSING or child is None:
            child = [] if type(following) is int else {}
            _put(current, seg, child)
        current = child
    _put(current, segments[-1], value)


def _put(container: Any, seg: str | int, value: Any) -> None:
    if isinstance(container, list):
        if type(seg) is not int:
            raise ValueError(f"partialArgs path puts key {seg!r} in a list")
        container.extend([None] * (seg + 1 - len(container)))
        container[seg] = value
    elif isinstance(container, dict):
        container[str(seg)] = value
    else:
        raise ValueError(f"partialArgs path goes through a {type(container).__name__} value")


def build_args(partial_args: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The arguments object that streamed ``partialArgs`` entries (in order) build.

    Each entry sets the value at its ``jsonPath`` (``$.a.b[0]``); a ``stringValue``
    for a path already holding a string continues it; an entry with no value makes
    an empty object (``[]`` for a path ending in ``[]``) unless the path is set or the
    entry continues. The rules of the AI SDK's ``GoogleJSONAccumulator``.
    """
    args: dict[str, Any] = {}
    for arg in partial_args:
        path = arg["jsonPath"]
        terminator = path.endswith("[]")
        if terminator:
            path = path[:-2]
        raw = path[2:] if path.startswith("$.") else path
        if not raw or raw == "$":
            continue
        segments = _path(raw)
        existing = _get(args, segments)
        string = arg.get("stringValue")
        if string is not None and existing is not _MISSING and isinstance(existing, str):
            _set(args, segments, existing + string)
            continue
        value: Any = _MISSING
        for key in ("stringValue", "numberValue", "boolValue"):
            if arg.get(key) is not None:
                value = arg[key]
                break
        else:
            if "nullValue" in arg:
                value = None
        if value is _MISSING:
            if existing is not _MISSING or arg.get("willContinue") is True:
                continue
            value = [] if terminator else {}
        _set(args, segments, value)
    return args


def _call(part: PartState) -> dict[str, Any]:
    call = dict(part.call)
    if part.streamed:
        call["args"] = build_args(items(part.partial))
    return call


def _part(part: PartState) -> dict[str, Any]:
    if part.kind == "text":
        out: dict[str, Any] = {"text": str(part.text)}
        if part.thought:
            out["thought"] = True
    elif part.kind == "functionCall":
        out = {"functionCall": _call(part)}
    else:
        return dict(part.value)
    out.update(part.extra)
    if part.signature is not None:
        out["thoughtSignature"] = _signature(part.signature)
    return out


def _response(state: ResponseState) -> dict[str, Any]:
    out: dict[str, Any] = {}
    candidates = []
    for candidate in sorted(state.candidates, key=lambda c: c.index):
        item: dict[str, Any] = {"content": {"parts": [_part(p) for p in candidate.parts]}}
        if candidate.role is not None:
            item["content"]["role"] = candidate.role
        item.update(candidate.fields)
        item["index"] = candidate.index
        candidates.append(item)
    if candidates:
        out["candidates"] = candidates
    out.update(state.fields)
    return out


def responses(nodes: Sequence[Node]) -> list[dict[str, Any]]:
    """The final ``GenerateContentResponse`` dicts, one per response, in log order."""
    return [_response(node.state) for node in nodes if node.kind == ResponseDefinition.kind]


PROTOCOL: Final = ProtocolSet.of_module(
    globals(),
    name="gemini",
    title="Gemini generateContent",
    definitions=(RESPONSE,),
    rebuild=responses,
)
"""The Gemini protocol set (``definitions.ProtocolSet``)."""

DEFINITIONS: Final = PROTOCOL.definitions
"""The Gemini definitions to register: the set's guard (``PROTOCOL.envelope``), then
the responses."""


# The names of one release ago (every set now says prepare, Preparer, Envelope).
__getattr__ = old_names(globals(), {"scope": "prepare", "Scoper": "Preparer", "Scoped": "Envelope"})
