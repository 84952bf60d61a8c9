"""Which protocol a recording speaks, and the set that folds it.

Theory of operation
-------------------
What a replay needs besides the events is a ``definitions.ProtocolSet``: the
definitions, the routing key for the engine (``event_type``) and the protocol's
pre-pass, if it has one. The pre-pass exists because some protocols leave out who an
event belongs to (Anthropic's deltas carry only a block index, AG-UI's chunks may
omit their id), and ``match`` must be pure: the protocol module names it in a small
causal pass that wraps each raw event in an envelope (see ``definitions.anthropic``).
The set is read off the module's declared contract, never re-implemented:

- a module that declares a ``PROTOCOL`` is folded by it (``definitions.anthropic``,
  ``definitions.ag_ui``, the built-in kinds' ``definitions.builtin``, ...);
- any other module (a plug-in) is a set with no pre-pass: its events go in as they
  are, routed by its ``event_type`` or by the shared key ``definitions.event_type``
  (``module_set``).

A module declares its event vocabulary, the tagged msgspec Structs its definitions
fold fastest, by its protocol set's ``vocabulary`` or else by a module-level
``Event``: a tagged Struct or a union of them
(``definitions.builtin.Event``, ``definitions.message.Event``). Replays decode the
events of those tags typed (``load_events(types=...)``). A module without one, or
whose ``Event`` is anything else (a ``dict`` alias), gets plain events; so does a set
combined from several modules unless every one of them declares a vocabulary,
because every definition sees every event and one written for plain events may not
take a Struct.

``detect_protocol`` tells the protocol from the events: each event of the first
``SCAN`` votes for the built-in kinds when its ``type`` is one of theirs, else for the
first protocol set whose ``detect`` recognises it (its ``type``, or for Chat
Completions chunks, which have none, their shape); types
that several protocols share (``error``) and unknown types do not vote. The most
votes win; a tie goes to the earlier protocol of ``PROTOCOLS``; no votes at all
means the built-in kinds, the default vocabulary. ``Detection.ambiguous`` says when
more than one protocol got votes, so a caller can say what it chose.
"""

from __future__ import annotations

import functools
import importlib
import operator
import os
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, Final

import attrs

from definitions import ProtocolSet
from definitions import event_type as shared_event_type

from .._errors import DefinitionSpecError
from ..logs._jsonl import event_types

__all__ = [
    "PROTOCOLS",
    "Detection",
    "detect_protocol",
    "load_definitions",
    "module_set",
    "protocol_definitions",
]

PROTOCOLS: Final[Mapping[str, tuple[str, str]]] = {
    "builtin": ("built-in kinds", "definitions.builtin"),
    "anthropic": ("Anthropic Messages", "definitions.anthropic"),
    "openai_chat": ("OpenAI Chat Completions", "definitions.openai_chat"),
    "openai_responses": ("OpenAI Responses", "definitions.openai_responses"),
    "ag_ui": ("AG-UI", "definitions.ag_ui"),
    "ai_sdk": ("AI SDK UI message stream", "definitions.ai_sdk"),
    "gemini": ("Gemini generateContent", "definitions.gemini"),
    "bedrock": ("AWS Bedrock ConverseStream", "definitions.bedrock"),
    "recorded": ("Recorded model calls", "definitions.recorded"),
}
"""Every protocol ``detect_protocol`` knows: name -> (title, definition module)."""

SCAN: Final = 2000
"""How many events (from the start of a recording) ``detect_protocol`` looks at."""


def _builtin_tags() -> frozenset[str]:
    from definitions.builtin import TAGS  # the built-in vocabulary, from its one source

    return TAGS


@functools.cache
def _protocol_sets() -> tuple[ProtocolSet, ...]:
    """The ``PROTOCOL`` of every protocol module of ``PROTOCOLS`` that imports, in order."""
    found = []
    for name, (_title, module_name) in PROTOCOLS.items():
        if name == "builtin":
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # a set still being written, or a broken install: no votes
            continue
        protocol = _protocol(module)
        if protocol is not None:
            found.append(protocol)
    return tuple(found)


def _vote(event: Any, builtin: frozenset[str], protocols: Sequence[ProtocolSet]) -> str | None:
    """The protocol whose vocabulary holds ``event``'s type, or ``None``."""
    if type(event) is not dict:
        # A typed event (a tagged msgspec Struct): only the built-in kinds decode to those.
        return "builtin" if shared_event_type(event) in builtin else None
    kind = event.get("type")
    if kind is not None and type(kind) is not str:
        return None  # a type that is not a string (hostile, damaged) is no one's
    if kind in builtin:
        return "builtin"
    for protocol in protocols:  # each set says what it recognises (its detect)
        if protocol.detect(event):
            return protocol.name
    return None


@attrs.frozen(kw_only=True)
class Detection:
    """What ``detect_protocol`` decided and why.

    ``protocol`` is a key of ``PROTOCOLS``; ``votes`` counts the scanned events each
    protocol recognised (``scanned`` of them were looked at). ``ambiguous`` is true
    when more than one protocol got votes; ``recognised`` is false when none did and
    the built-in kinds were chosen as the default.
    """

    protocol: str
    votes: Mapping[str, int]
    scanned: int

    @property
    def title(self) -> str:
        """The protocol's name for people (``"Anthropic Messages"``)."""
        return PROTOCOLS[self.protocol][0]

    @property
    def module(self) -> str:
        """The module holding the protocol's definition set."""
        return PROTOCOLS[self.protocol][1]

    @property
    def ambiguous(self) -> bool:
        """More than one protocol recognised some of the events."""
        return len(self.votes) > 1

    @property
    def recognised(self) -> bool:
        """Some event belonged to a known protocol."""
        return bool(self.votes)

    def describe(self) -> str:
        """One line: the choice and the evidence for it."""
        if not self.recognised:
            return (
                f"no event of a known protocol among the first {self.scanned}; "
                f"using the {self.title} ({self.module})"
            )
        found = ", ".join(f"{PROTOCOLS[name][0]}: {count}" for name, count in _ranked(self.votes))
        verdict = f"{self.title} ({self.module})"
        if self.ambiguous:
            return f"ambiguous recording, chose {verdict}; events recognised per protocol: {found}"
        return f"{verdict}: {self.votes[self.protocol]} of {self.scanned} events recognised"


def _ranked(votes: Mapping[str, int]) -> list[tuple[str, int]]:
    order = list(PROTOCOLS)
    return sorted(votes.items(), key=lambda item: (-item[1], order.index(item[0])))


def detect_protocol(events: Iterable[Any]) -> Detection:
    """Tell which protocol ``events`` (a recording's raw events, in order) speak.

    Looks at the first ``SCAN`` events only (see the module docstring for the rule).
    Never raises for odd events: anything unrecognised simply does not vote.
    """
    builtin = _builtin_tags()
    protocols = _protocol_sets()
    votes: Counter[str] = Counter()
    scanned = 0
    for event in events:
        if scanned >= SCAN:
            break
        scanned += 1
        name = _vote(event, builtin, protocols)
        if name is not None:
            votes[name] += 1
    protocol = _ranked(votes)[0][0] if votes else "builtin"
    return Detection(protocol=protocol, votes=dict(votes), scanned=scanned)


# -- definition sets -------------------------------------------------------------------


def module_set(
    module: ModuleType, definitions: Iterable[Any] | None = None, *, name: str = ""
) -> ProtocolSet:
    """The set a module folds with: its ``PROTOCOL`` when it declares one (with
    ``definitions`` other than the protocol's own: its pre-pass and routing, no
    rebuild), else its ``DEFINITIONS`` (or ``definitions``) with no pre-pass, routed
    by its ``event_type`` or the shared key, with the vocabulary it declares (see the
    module docstring). ``name`` says where the set came from, for messages."""
    protocol = _protocol(module)
    if protocol is not None:
        given = protocol.definitions if definitions is None else tuple(definitions)
        if given == protocol.definitions and not name:
            return protocol
        return protocol.with_definitions(given, title=name or None)
    route = getattr(module, "event_type", None)
    return ProtocolSet(
        name=name or module.__name__,
        definitions=tuple(module.DEFINITIONS if definitions is None else definitions),
        event_type=route if callable(route) else shared_event_type,
        vocabulary=_declared_vocabulary(module),
    )


def _protocol(module: ModuleType) -> ProtocolSet | None:
    """The protocol set ``module`` declares (its ``PROTOCOL``), or ``None``."""
    protocol = getattr(module, "PROTOCOL", None)
    return protocol if isinstance(protocol, ProtocolSet) else None


def _declared_vocabulary(module: ModuleType) -> Any:
    """``module``'s event vocabulary: its protocol set's, else its ``Event`` when that
    is a tagged msgspec Struct or a union of them, else ``None`` (see the module
    docstring)."""
    protocol = _protocol(module)
    return _vocabulary(getattr(module, "Event", None) if protocol is None else protocol.vocabulary)


def _vocabulary(types: Any) -> Any:
    if types is None:
        return None
    try:
        event_types(types)  # builds (and keeps) its decoders: a replay will want them
    except TypeError:  # not a vocabulary msgspec can decode, or unhashable
        return None
    return types


def protocol_definitions(protocol: str) -> ProtocolSet:
    """The set of a protocol named in ``PROTOCOLS``: its module's ``PROTOCOL``.

    Raises ``DefinitionSpecError`` when its module cannot be imported (a set still
    being written, or a broken install).
    """
    title, module_name = PROTOCOLS[protocol]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DefinitionSpecError(
            module_name, f"the {title} definition set is not available ({exc})"
        ) from exc
    return module_set(module)


def _is_definition(value: object) -> bool:
    return isinstance(getattr(value, "kind", None), str) and callable(getattr(value, "match", None))


def _import(spec: str) -> tuple[ModuleType, object]:
    module_name, _, attribute = spec.partition(":")
    if not module_name:
        raise DefinitionSpecError(spec, "expected MODULE or MODULE:ATTR")
    # As uvicorn does for its app: a plug-in module beside the user resolves even when
    # `convo` runs from a console script (whose sys.path[0] is the script's folder).
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any failure while importing user code: report, no traceback
        raise DefinitionSpecError(spec, f"{type(exc).__name__}: {exc}") from exc
    value: object = module
    for part in attribute.split(".") if attribute else ():
        try:
            value = getattr(value, part)
        except AttributeError as exc:
            raise DefinitionSpecError(spec, f"{type(exc).__name__}: {exc}") from exc
    if isinstance(value, ModuleType):
        # MODULE:ATTR naming a module, or a bare MODULE: its DEFINITIONS, its wiring.
        module = value
        if not hasattr(module, "DEFINITIONS"):
            raise DefinitionSpecError(
                spec,
                f"module {module.__name__!r} has no DEFINITIONS; name the attribute "
                "that holds the definitions: MODULE:ATTR",
            )
        value = module.DEFINITIONS
    return module, value


def _as_definitions(spec: str, value: object) -> tuple[Any, ...]:
    if _is_definition(value):
        return (value,)
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise DefinitionSpecError(
            spec,
            f"expected a definition or a sequence of definitions, got {type(value).__name__}",
        )
    return tuple(value)


def load_definitions(specs: Sequence[str]) -> ProtocolSet:
    """The definition set named by ``specs``, each ``MODULE`` (its ``DEFINITIONS``) or
    ``MODULE:ATTR`` (a dotted attribute holding a definition or a sequence of them).

    Definitions are registered in the order given. The module each spec names
    supplies the pre-pass and routing key (see the module docstring), so
    ``definitions.anthropic`` works as well as ``myapp.kinds:ALL``; two specs whose
    modules need different pre-passes cannot be combined. The current directory is
    importable, as for ``python -m``. Raises ``DefinitionSpecError``; whether each
    value really is a definition is checked when an engine registers it
    (``RegistrationError``).
    """
    if not specs:
        raise ValueError("load_definitions needs at least one spec")
    found: list[Any] = []
    fed_by: tuple[ModuleType, str] | None = None  # the module whose wiring is in force
    vocabularies: list[Any] = []
    for spec in specs:
        module, value = _import(spec)
        found.extend(_as_definitions(spec, value))
        protocol = _protocol(module)
        vocabularies.append(_declared_vocabulary(module))
        route = getattr(module, "event_type", None) if protocol is None else protocol.event_type
        if (protocol is None or protocol.prepare is None) and (
            not callable(route) or route is shared_event_type
        ):
            continue  # the shared key, no pre-pass: feeds events as every plug-in does
        if fed_by is not None and fed_by[0] is not module:
            raise DefinitionSpecError(
                spec,
                f"its module feeds events differently from {fed_by[1]!r} (its own "
                "pre-pass or routing key); definitions from both cannot be replayed together",
            )
        fed_by = (module, spec)
    vocabulary = None
    if None not in vocabularies:
        # Two vocabularies that share a tag cannot be one union: then plain events.
        vocabulary = _vocabulary(functools.reduce(operator.or_, vocabularies))
    title = " ".join(specs)
    if fed_by is None:
        return ProtocolSet(name=title, definitions=found, vocabulary=vocabulary)
    module = fed_by[0]
    protocol = _protocol(module)
    if protocol is None:
        return ProtocolSet(
            name=title, definitions=found, event_type=module.event_type, vocabulary=vocabulary
        )
    chosen = protocol.with_definitions(found, title=title)
    return (
        chosen if chosen.vocabulary is vocabulary else attrs.evolve(chosen, vocabulary=vocabulary)
    )
