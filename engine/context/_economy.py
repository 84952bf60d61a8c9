"""The context economy: what of the conversation the model gets, decided purely.

Theory of operation (docs/economy.md; seed 004). Policies are options of
the model-context projection, never edits of the log: each takes the
conversation as generic ``Message``\\ s and returns the messages to send, plus
the spill files a workbench must hold. No I/O, no clock: the caller (``replay``'s
workbench) writes the files.

- **At entry** (prefix-stable: a message's fate depends on itself and its call
  only, so it is the same on every later call): *spill*. A tool result whose
  content is a string over ``spill_threshold`` chars becomes a pointer line and
  its first ``spill_preview`` chars; the whole string goes to a content-addressed
  file (``spill_name``), so a replay writes the same files. Lists of parts
  (images) are never touched, and a call that reads a spill file back is never
  spilled again: the pointer says "read it if you need it all", and that must
  be possible.
- **At load** (resume, when the provider's cache is cold anyway; or a safepoint
  when it frees at least ``clear_at_least`` chars, see ``Economist``):
  *expiry* of ephemeral results (``Economy.glance``) older than the
  ``keep_recent`` latest; *denial pruning* (``ToolResult.denied``, the approval
  kind's decision) keeping the ``keep_denials`` latest; *interruption repair*
  (the result of an interrupted call becomes ``INTERRUPTED``, the call stays);
  *retry debris* dropped; *trim* (off by default) of results of at least
  ``trim_min_chars`` except the ``trim_keep_recent`` latest.
- **Pairing is sacred.** A call and its result leave together; the turn's other
  calls stay; a turn left with no text and no call goes (its reasoning with it:
  reasoning stays with the tool turn it belongs to); turns of one role left
  next to each other are merged, as providers that alternate roles require.

Which calls are ephemeral is one predicate the economy is given, ``Economy.glance``
(a call -> the command it ran when its result is a passing glance at state, else
``None``): knowing that takes knowing the harnesses' shells and tools, which is
``definitions.harness.glance``. Without one nothing expires. The economy imports
nothing of ``definitions``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Final

import msgspec

from ._message import Compaction, Message, Native, Part, Reasoning, Role, Text, ToolCall, ToolResult

__all__ = [
    "INTERRUPTED",
    "Economist",
    "Economized",
    "Economy",
    "Marks",
    "Spill",
    "economize",
    "spill_name",
]

INTERRUPTED: Final = "[the previous turn was interrupted here: this tool result was never produced]"
"""The neutral result of an interrupted call (interruption repair)."""


_COUNTS: Final = (
    "spill_threshold",
    "spill_preview",
    "keep_recent",
    "trim_min_chars",
    "trim_keep_recent",
    "clear_at_least",
)


class Economy(msgspec.Struct, frozen=True, kw_only=True):
    """The economy's options; ``Economy.none()``, ``.live()`` and ``.resume()`` are
    the three sets ``convo context --policy`` names.

    ``glance`` is the expiry's predicate: a call -> the command it ran when its result
    is a passing glance at state (``definitions.harness.glance``), else ``None``;
    without one (the default) nothing expires.

    ``spill_threshold`` 0 turns spilling off; ``spill_dir`` is the directory the
    pointers name (where the workbench writes the files). ``load_time`` turns on
    the load-time policies (expiry, denial pruning, repair, debris, trim); each
    has its own switch or count. ``keep_denials`` ``None`` keeps every denial.
    """

    spill_threshold: int = 4000
    spill_preview: int = 400
    spill_dir: str = ".workbench/spill"
    load_time: bool = True
    expire: bool = True
    keep_recent: int = 6
    keep_denials: int | None = 1
    repair_interruptions: bool = True
    drop_retry_debris: bool = True
    trim: bool = False
    trim_min_chars: int = 2000
    trim_keep_recent: int = 20
    clear_at_least: int = 4000
    glance: Callable[[ToolCall], str | None] | None = None

    def __post_init__(self) -> None:
        for name in _COUNTS:
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"Economy.{name} must be an int >= 0, not {value!r}")
        if self.keep_denials is not None and (
            type(self.keep_denials) is not int or self.keep_denials < 0
        ):
            raise ValueError(
                f"Economy.keep_denials must be an int >= 0 or None (keep all), "
                f"not {self.keep_denials!r}"
            )

    @classmethod
    def none(cls, *, glance: Callable[[ToolCall], str | None] | None = None) -> Economy:
        """No policy: the conversation as recorded (only what validity needs)."""
        return cls(spill_threshold=0, load_time=False, glance=glance)

    @classmethod
    def live(cls, *, glance: Callable[[ToolCall], str | None] | None = None) -> Economy:
        """What a running agent gets: spill at entry only (prefix-stable)."""
        return cls(load_time=False, glance=glance)

    @classmethod
    def resume(cls, *, glance: Callable[[ToolCall], str | None] | None = None) -> Economy:
        """Spill at entry and the load-time defaults (trim off); expiry asks ``glance``."""
        return cls(glance=glance)


class Marks(msgspec.Struct, frozen=True):
    """Facts about the conversation that are not in its messages: the calls that
    were ``interrupted`` (their results repaired) and the indexes of the messages
    that are retry ``debris`` (synthetic errors written while retrying)."""

    interrupted: frozenset[str] = frozenset()
    debris: frozenset[int] = frozenset()


class Spill(msgspec.Struct, frozen=True):
    """A spill file to write: ``name`` in the spill directory, holding ``content``."""

    name: str
    content: str


class Economized(msgspec.Struct, frozen=True):
    """What ``economize`` returns: the ``messages`` to send, the ``spills`` to write,
    and the calls each load-time policy touched (for figures and tests)."""

    messages: tuple[Message, ...]
    spills: tuple[Spill, ...] = ()
    expired: frozenset[str] = frozenset()
    pruned: frozenset[str] = frozenset()
    repaired: frozenset[str] = frozenset()
    trimmed: frozenset[str] = frozenset()
    dropped: frozenset[int] = frozenset()
    stable: int = 0
    """How many leading messages are those of the ``Economist``'s previous answer
    (0 from ``economize``): a caller converts only the rest."""

    @property
    def size(self) -> int:
        """Characters of the messages' text, arguments and results."""
        return sum(message_size(m) for m in self.messages)


def spill_name(content: str) -> str:
    """The content-addressed file name of a spilled string."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".txt"


def _pointer(directory: str, name: str, size: int, preview: str) -> str:
    path = f"{directory.rstrip('/')}/{name}"
    head = f"[output spilled: {size:,} chars in {path}; read that file if you need it all."
    if not preview:
        return head + "]"
    return f"{head} The first {len(preview):,} chars follow.]\n{preview}"


def expired_sentence(command: str, ordinal: int) -> str:
    """What an expired ephemeral result becomes. ``ordinal`` (the result's place
    among the conversation's tool results, from 1) dates it without changing on
    later calls, so an expiry decided once keeps the prefix stable."""
    return (
        f"[the result of `{command}` (tool call {ordinal}) expired: the state may have "
        "changed since; run it again if you need it]"
    )


# -- sizes ---------------------------------------------------------------------------------


def part_size(part: Part) -> int:
    """Characters a part puts in a request (text, arguments, result strings)."""
    if isinstance(part, Text):
        return len(part.text)
    if isinstance(part, ToolCall):
        return len(part.name) + len(part.arguments)
    if isinstance(part, ToolResult):
        if isinstance(part.content, str):
            return len(part.content)
        return sum(part_size(p) for p in part.content)
    if isinstance(part, Reasoning):
        return len(part.text) + len(part.signature or "") + len(part.encrypted or "")
    if isinstance(part, Native):
        return len(part.data)
    if isinstance(part, Compaction):
        return len(part.text) + len(part.data or "")
    return len(part.data or "") + len(part.url or "")


def message_size(message: Message) -> int:
    """Characters a message puts in a request."""
    if isinstance(message.content, str):
        return len(message.content)
    return sum(part_size(p) for p in message.content)


# -- the policies -------------------------------------------------------------------------


class _Index:
    """Where each call and result is: (message index, part index), in order."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.calls: dict[str, ToolCall] = {}
        self.results: list[tuple[int, int, ToolResult]] = []
        for i, message in enumerate(messages):
            if isinstance(message.content, str):
                continue
            for j, part in enumerate(message.content):
                call = _call_of(part)
                if call is not None:
                    self.calls[call.id] = call
                elif isinstance(part, ToolResult):
                    self.results.append((i, j, part))


def _call_of(part: Part) -> ToolCall | None:
    # A provider block that is a tool call (engine.Native.call) pairs like a ToolCall.
    if isinstance(part, ToolCall):
        return part
    return part.call if isinstance(part, Native) else None


def _reads_spill(call: ToolCall | None, directory: str) -> bool:
    # A call whose arguments name the spill directory reads a spill file back.
    return call is not None and bool(directory) and directory.rstrip("/") in call.arguments


def economize(
    messages: Sequence[Message],
    economy: Economy,
    marks: Marks = Marks(),  # noqa: B008 (frozen: one shared empty value is safe)
    *,
    decided: Economized | None = None,
) -> Economized:
    """The messages to send under ``economy``, with the spill files to write.

    ``decided`` reuses an earlier answer's load-time decisions (the calls it
    expired, pruned, repaired, trimmed and the messages it dropped) instead of
    deciding again: what ``Economist`` does between safepoints.
    """
    index = _Index(messages)
    replace: dict[tuple[int, int], Part | None] = {}
    spills: dict[str, Spill] = {}
    _spill_at_entry(index, economy, replace, spills)
    if not economy.load_time:
        return _assemble(messages, replace, frozenset(), spills)
    if decided is None:
        chosen = _decide(messages, index, economy, marks)
    else:
        chosen = _Decisions(
            decided.expired, decided.pruned, decided.repaired, decided.trimmed, decided.dropped
        )
    _apply_decisions(messages, index, economy, chosen, replace, spills)
    out = _assemble(messages, replace, chosen.dropped, spills)
    return msgspec.structs.replace(
        out,
        expired=chosen.expired,
        pruned=chosen.pruned,
        repaired=chosen.repaired,
        trimmed=chosen.trimmed,
        dropped=chosen.dropped,
    )


def _spill_at_entry(
    index: _Index,
    economy: Economy,
    replace: dict[tuple[int, int], Part | None],
    spills: dict[str, Spill],
) -> None:
    # Each result string over the threshold becomes a pointer to its spill file,
    # except a read of a spill file itself (that would never end).
    threshold = economy.spill_threshold
    if threshold <= 0:
        return
    for i, j, result in index.results:
        content = result.content
        if (
            isinstance(content, str)
            and len(content) > threshold
            and not _reads_spill(index.calls.get(result.call_id), economy.spill_dir)
        ):
            name = spill_name(content)
            spills[name] = Spill(name, content)
            pointer = _pointer(
                economy.spill_dir, name, len(content), content[: economy.spill_preview]
            )
            replace[i, j] = msgspec.structs.replace(result, content=pointer)


def _apply_decisions(
    messages: Sequence[Message],
    index: _Index,
    economy: Economy,
    chosen: _Decisions,
    replace: dict[tuple[int, int], Part | None],
    spills: dict[str, Spill],
) -> None:
    # The load-time decisions as replacements: repaired, expired and trimmed results
    # rewritten, pruned calls and their results removed (``None``).
    where = {result.call_id: (i, j) for i, j, result in index.results}
    ordinals = {result.call_id: n for n, (_, _, result) in enumerate(index.results, start=1)}
    for call_id in chosen.repaired:
        if call_id in where:
            i, j = where[call_id]
            result = _result_at(messages, i, j)
            replace[i, j] = msgspec.structs.replace(result, content=INTERRUPTED, is_error=True)
    for call_id in chosen.expired:
        if call_id in where:
            i, j = where[call_id]
            result = _result_at(messages, i, j)
            command = _glance(economy, index.calls.get(call_id)) or ""
            sentence = expired_sentence(command, ordinals[call_id])
            replace[i, j] = msgspec.structs.replace(result, content=sentence)
    for call_id in chosen.trimmed:
        if call_id in where:
            i, j = where[call_id]
            result = _result_at(messages, i, j)
            if isinstance(result.content, str):
                name = spill_name(result.content)
                spills[name] = Spill(name, result.content)
                pointer = _pointer(economy.spill_dir, name, len(result.content), "")
                replace[i, j] = msgspec.structs.replace(result, content=pointer)
    pruned = chosen.pruned
    for i, message in enumerate(messages):
        if isinstance(message.content, str):
            continue
        for j, part in enumerate(message.content):
            call = _call_of(part)
            if (call is not None and call.id in pruned) or (
                isinstance(part, ToolResult) and part.call_id in pruned
            ):
                replace[i, j] = None


def _result_at(messages: Sequence[Message], i: int, j: int) -> ToolResult:
    part = messages[i].content[j]
    assert isinstance(part, ToolResult)
    return part


class _Decisions(msgspec.Struct, frozen=True):
    """The load-time policies' choices: which calls each touched, which messages went."""

    expired: frozenset[str]
    pruned: frozenset[str]
    repaired: frozenset[str]
    trimmed: frozenset[str]
    dropped: frozenset[int]


def _decide(
    messages: Sequence[Message], index: _Index, economy: Economy, marks: Marks
) -> _Decisions:
    results = index.results
    repaired = frozenset(
        r.call_id for _, _, r in results if r.call_id in marks.interrupted
    ) if economy.repair_interruptions else frozenset()  # fmt: skip
    denied = [r.call_id for _, _, r in results if r.denied]
    keep = economy.keep_denials
    pruned = frozenset(denied[: max(0, len(denied) - keep)] if keep is not None else ())
    expired: frozenset[str] = frozenset()
    if economy.expire and economy.glance is not None:
        ephemeral = [
            r.call_id
            for _, _, r in results
            if r.call_id not in pruned
            and r.call_id not in repaired
            and isinstance(r.content, str)
            and _glance(economy, index.calls.get(r.call_id)) is not None
        ]
        expired = frozenset(ephemeral[: max(0, len(ephemeral) - economy.keep_recent)])
    trimmed: frozenset[str] = frozenset()
    if economy.trim:
        candidates = [r.call_id for _, _, r in results]
        old = set(candidates[: max(0, len(candidates) - economy.trim_keep_recent)])
        trimmed = frozenset(
            r.call_id
            for _, _, r in results
            if r.call_id in old
            and r.call_id not in pruned | expired | repaired
            and isinstance(r.content, str)
            and len(r.content) >= economy.trim_min_chars
            and not _reads_spill(index.calls.get(r.call_id), economy.spill_dir)
        )
    dropped = frozenset(
        i for i in marks.debris if 0 <= i < len(messages)
    ) if economy.drop_retry_debris else frozenset()  # fmt: skip
    return _Decisions(expired, pruned, repaired, trimmed, dropped)


def _glance(economy: Economy, call: ToolCall | None) -> str | None:
    # The command an ephemeral call ran, by the economy's predicate (None: not one).
    return None if call is None or economy.glance is None else economy.glance(call)


def _assemble(
    messages: Sequence[Message],
    replace: dict[tuple[int, int], Part | None],
    dropped: frozenset[int],
    spills: dict[str, Spill],
) -> Economized:
    """The messages with parts replaced or removed, keeping the pairing rules: empty
    turns go, and two turns of one role that a removal left next to each other
    become one (providers that alternate roles require it); the rest is untouched."""
    out: list[Message] = []
    removed = False  # a turn went since the last one kept: its neighbours may meet
    for i, message in enumerate(messages):
        if i in dropped:
            removed = True
            continue
        if isinstance(message.content, str):
            kept: Message | None = message
        else:
            parts: list[Part] = []
            lost = changed = False
            for j, part in enumerate(message.content):
                if (i, j) in replace:
                    new = replace[i, j]
                    changed = True
                    if new is None:
                        lost = True
                        continue
                    parts.append(new)
                else:
                    parts.append(part)
            if lost:
                kept = _rebuilt(message, parts)
            else:
                kept = Message(role=message.role, content=tuple(parts)) if changed else message
        if kept is None or not kept.content:
            removed = True
            continue
        if removed and out and out[-1].role == kept.role and kept.role != Role.system:
            out[-1] = Message(role=kept.role, content=out[-1].parts + kept.parts)
        else:
            out.append(kept)
        removed = False
    return Economized(messages=tuple(out), spills=tuple(spills[k] for k in sorted(spills)))


def _rebuilt(message: Message, parts: list[Part]) -> Message | None:
    # A turn left with nothing but reasoning goes whole: reasoning belongs to its tool turn.
    if not any(not isinstance(p, Reasoning) for p in parts):
        return None
    return Message(role=message.role, content=tuple(parts))


class Economist:
    """Applies an ``Economy`` call after call, to a conversation that only grows.

    Without load-time policies (``Economy.live()``, ``.none()``) only spill at entry
    applies, and only to what arrived since the previous call: the earlier messages
    are kept as they were sent (``Economized.stable`` says how many), so the work per
    call does not grow with the history and the prefix never breaks.

    With them, the first ``request`` is the resume: every load-time policy applies.
    Each later one is a safepoint: the load-time decisions are taken again only when
    that frees at least ``clear_at_least`` more chars than keeping the earlier ones
    (so the provider's cached prefix breaks rarely); otherwise the earlier decisions
    stand and what arrived since is only spilled at entry.

    ``request`` returns the spill files that answer added; a workbench writes them.
    """

    def __init__(self, economy: Economy) -> None:
        self.economy = economy
        self._decided: Economized | None = None
        self._seen = 0  # messages of the input already economized (entry only)
        self._last: Message | None = None
        self._out: list[Message] = []
        self._names: set[str] = set()
        self.collections = 0
        """How many requests took new load-time decisions (the resume included)."""

    def request(self, messages: Sequence[Message], marks: Marks = Marks()) -> Economized:  # noqa: B008
        """The economized conversation for the next call."""
        economy = self.economy
        if not economy.load_time:
            return self._enter(messages)
        fresh = economize(messages, economy, marks)
        if self._decided is not None:
            kept = economize(messages, economy, marks, decided=self._decided)
            if kept.size - fresh.size < economy.clear_at_least:
                return self._new_spills(kept)
        self._decided = fresh
        self.collections += 1
        return self._new_spills(fresh)

    def _enter(self, messages: Sequence[Message]) -> Economized:
        seen = self._seen
        grown = 0 < seen <= len(messages) and messages[seen - 1] is self._last
        if not grown:
            seen, self._out = 0, []
        added = economize(messages[seen:], self.economy)
        if self._out and added.messages and added.messages[0].role == self._out[-1].role:
            # the new part merges into the last turn (retry debris before a retry)
            seen, self._out = 0, []
            added = economize(messages, self.economy)
        stable = len(self._out)
        self._out.extend(added.messages)
        self._seen = len(messages)
        self._last = messages[-1] if messages else None
        fresh = self._new_spills(added)
        return msgspec.structs.replace(fresh, messages=tuple(self._out), stable=stable)

    def _new_spills(self, answer: Economized) -> Economized:
        spills = tuple(s for s in answer.spills if s.name not in self._names)
        self._names.update(s.name for s in spills)
        return msgspec.structs.replace(answer, spills=spills)
