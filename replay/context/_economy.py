"""The context economy over a log: the request before every model call, and its figures.

Theory of operation
-------------------
A log's nodes become the conversation as generic messages (``conversation``), in
log order, with what is not in the messages themselves kept beside them as
``engine.Marks``: the calls an ``interruption`` cut or stopped, and the retry
debris. A model call starts at every assistant turn, so the request before call
N is the conversation before that turn, economized by an ``engine.Economist``
(which applies the policy set call after call as a running or resumed agent
would), with the workbench's index as the leading system message when there is
a workbench, converted by a provider gateway. ``requests`` yields them in order;
spill files are written to the workbench as they appear. ``measure`` turns a run
of requests into the figures ``convo context --stats`` and
``benchmarks/bench_economy.py`` print: size per call and summed, prefix reuse
between consecutive requests (the longest common prefix of their serialized
forms over the previous one's length) and prefix breaks, invalid requests, and a
hash of every request for determinism checks.

Interruptions (``definitions.interruption``) become messages and marks here, in
one place (``conversation``); the rest of the conversation is
``definitions.conversation``'s.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

import attrs
import msgspec

from definitions.conversation import answer_unanswered, conversation_messages
from definitions.gateways import Carried, Gateway
from definitions.harness import glance
from engine import (
    INTERRUPTED,
    Economist,
    Economized,
    Economy,
    Marks,
    Message,
    Node,
    Role,
    compaction_of,
    is_summary,
    restart,
    since_compaction,
    without_compactions,
)

from ._requests import build, conversation_items
from ._workbench import Workbench, WorkbenchIndex

__all__ = [
    "POLICIES",
    "CallRequest",
    "Conversation",
    "Figures",
    "common_prefix",
    "conversation",
    "measure",
    "requests",
    "serialize",
    "timed",
]

POLICIES: Final[dict[str, Callable[[], Economy]]] = {
    "none": Economy.none,
    "live": Economy.live,
    "resume": functools.partial(Economy.resume, glance=glance),
}
"""The policy sets ``convo context --policy`` names."""


@attrs.frozen(kw_only=True)
class Conversation:
    """A log's conversation: ``messages`` in log order, the ``marks`` beside them,
    and ``calls``, the index of the first message of every model turn."""

    messages: tuple[Message, ...]
    marks: Marks
    calls: tuple[int, ...]
    compactions: tuple[int, ...] = ()
    """The index of every message that holds a compaction (``engine.compaction_of``)."""


# -- nodes -> messages ----------------------------------------------------------------


def conversation(nodes: Iterable[Node], *, compaction: bool = True) -> Conversation:
    """The nodes' conversation (``definitions.conversation.conversation_messages``),
    with the ``interruption`` kind's facts woven in where they happened.

    The nodes are read in runs between interruption marks. A ``user`` mark with no
    call is the harness's notice as a user turn; ``retry_error`` is its text as an
    assistant turn, marked debris; a ``cut`` mark, or a ``user`` mark at a call,
    marks that call interrupted. A call the conversation moved past without a
    result is answered with the neutral ``NO_RESULT`` (``answer_unanswered``).
    ``compaction=False`` is the counterfactual: the history as if nothing had been
    compacted (``engine.without_compactions``).
    """
    messages: list[Message] = []
    debris: list[Message] = []
    interrupted: set[str] = set()
    run: list[Node] = []
    for node in nodes:
        if node.kind != "interruption":
            run.append(node)
            continue
        messages += conversation_messages(run)
        run = []
        state = node.state
        if state.tool_call_id is not None:
            interrupted.add(state.tool_call_id)
        elif state.cause == "retry_error":
            debris.append(Message(role=Role.assistant, content=state.text or "API error"))
            messages.append(debris[-1])
        elif state.cause == "user":
            messages.append(Message(role=Role.user, content=state.text or INTERRUPTED))
    messages += conversation_messages(run)
    if not compaction:
        messages = without_compactions(messages)
    messages = answer_unanswered(messages, set())
    flagged = {i for i, m in enumerate(messages) if any(m is d for d in debris)}
    calls = tuple(
        i
        for i, m in enumerate(messages)
        if m.role == Role.assistant and i not in flagged and not is_summary(m)
    )
    return Conversation(
        messages=tuple(messages),
        marks=Marks(interrupted=frozenset(interrupted), debris=frozenset(flagged)),
        calls=calls,
        compactions=tuple(i for i, m in enumerate(messages) if compaction_of(m) is not None),
    )


def _window(talk: Conversation, end: int) -> tuple[Sequence[Message], Marks, int]:
    """The messages before ``end`` that a request holds (``engine.since_compaction``:
    from the latest compaction on), their marks (debris indexes moved with them),
    and where that window starts (-1: the whole history)."""
    debris = [i for i in talk.marks.debris if i < end]
    latest = bisect.bisect_left(talk.compactions, end) - 1
    if latest < 0:
        return talk.messages[:end], Marks(talk.marks.interrupted, frozenset(debris)), -1
    head = talk.messages[: talk.compactions[latest] + 1]
    point = restart(head)
    assert point is not None
    window = [*since_compaction(head), *talk.messages[len(head) : end]]
    moved = frozenset(
        i if i < point.lead else i - point.start + point.lead
        for i in debris
        if i < point.lead or i >= point.start
    )
    return window, Marks(talk.marks.interrupted, moved), point.start


# -- requests -------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CallRequest:
    """The request before model call ``call`` (from 0): the provider ``payload``, the
    economized conversation it came from, and the validator's ``problems``."""

    call: int
    payload: dict[str, Any]
    economized: Economized
    problems: tuple[Any, ...]

    def serialized(self) -> bytes:
        """The payload as a cache sees it: everything but the conversation first, then
        the conversation's items one per line (what a provider's prefix cache keys)."""
        return serialize(self.payload)


def serialize(payload: dict[str, Any]) -> bytes:
    """``payload`` with its conversation items last, one per line (see ``CallRequest``)."""
    key, items = conversation_items(payload)
    head = {k: v for k, v in payload.items() if k != key}
    lines = [msgspec.json.encode(head)]
    lines += [msgspec.json.encode(item) for item in items]
    return b"\n".join(lines) + b"\n"


def requests(
    talk: Conversation,
    gateway: Gateway,
    economy: Economy,
    *,
    workbench: Workbench | None = None,
    head: Carried | None = None,
    safepoints: bool = False,
) -> Iterator[CallRequest]:
    """The request before every model call of ``talk`` under ``economy``, then the one
    after the whole log; spill files are written to ``workbench`` (which also gives
    the leading system message, its index) as they appear. Without a workbench
    nothing is written: the pointers name ``economy.spill_dir``. ``head`` is what
    each request carries beside the conversation (model, tools, settings:
    ``replay.context._requests.carried``); none without it.

    With load-time policies, every request is a resume (decided afresh on the
    history so far, as an agent resumed before that call would send it); with
    ``safepoints`` the log is resumed once, before its first call, and each later
    call is a safepoint that re-decides only when that frees ``clear_at_least``
    chars (``engine.Economist``). Without them (``live``) each call converts only
    what arrived since the previous one."""
    if workbench is not None:
        economy = workbench.economy(economy)
    head = head or Carried(provider=gateway.name)
    economist = Economist(economy)
    index = WorkbenchIndex(workbench) if workbench is not None else None
    converted: list[Sequence[Any]] = []  # each economized message's items, kept
    started = -1  # where the window of the previous request started
    # before every model turn, then after the whole log (as replay.context._requests does)
    for n, end in enumerate((*talk.calls, len(talk.messages))):
        window, marks, start = _window(talk, end)
        if (economy.load_time and not safepoints) or start != started:
            # a resume before every call; or a compaction: a new conversation
            economist = Economist(economy)
            converted = []
        started = start
        out = economist.request(window, marks)
        del converted[out.stable :]
        converted += [gateway.items(m) for m in out.messages[out.stable :]]
        items: list[Any] = []
        if workbench is not None and index is not None:
            workbench.write(out.spills)
            items += gateway.items(Message(role=Role.system, content=index.text()))
        items += [item for message_items in converted for item in message_items]
        payload = build(gateway, items, head)
        problems = tuple(gateway.validate(payload))
        yield CallRequest(call=n, payload=payload, economized=out, problems=problems)


def timed(calls: Iterator[CallRequest]) -> tuple[list[CallRequest], list[float]]:
    """Every request of ``calls`` and the seconds each took to build, in order."""
    out: list[CallRequest] = []
    seconds: list[float] = []
    while True:
        start = time.perf_counter()
        request = next(calls, None)
        if request is None:
            return out, seconds
        seconds.append(time.perf_counter() - start)
        out.append(request)


# -- figures ----------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Figures:
    """What a run of requests measures (see the module docstring). ``sizes`` are the
    serialized requests' lengths in chars; ``reuse`` the prefix reuse of each
    request after the first; ``spilled`` the chars the spill files hold."""

    sizes: tuple[int, ...]
    reuse: tuple[float, ...]
    breaks: int
    invalid: int
    spilled: int
    digest: str

    @property
    def total(self) -> int:
        """The summed request size."""
        return sum(self.sizes)

    @property
    def mean_reuse(self) -> float:
        """Prefix reuse averaged over consecutive pairs (1.0 for fewer than two calls)."""
        return sum(self.reuse) / len(self.reuse) if self.reuse else 1.0

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready values."""
        return {
            "calls": len(self.sizes),
            "chars": self.total,
            "chars_last_call": self.sizes[-1] if self.sizes else 0,
            "prefix_reuse": round(self.mean_reuse, 4),
            "prefix_breaks": self.breaks,
            "invalid": self.invalid,
            "spilled_chars": self.spilled,
            "digest": self.digest,
        }


def measure(calls: Iterable[CallRequest]) -> Figures:
    """The figures of a run of requests, consumed in order."""
    sizes: list[int] = []
    reuse: list[float] = []
    breaks = invalid = 0
    spilled: dict[str, int] = {}
    digest = hashlib.sha256()
    previous = b""
    for request in calls:
        data = request.serialized()
        text_size = len(data.decode("utf-8", "replace"))
        sizes.append(text_size)
        if previous:
            common = common_prefix(previous, data)
            reuse.append(common / len(previous))
            if common < len(previous):
                breaks += 1
        previous = data
        invalid += bool(request.problems)
        for spill in request.economized.spills:
            spilled[spill.name] = len(spill.content)
        digest.update(hashlib.sha256(data).digest())
    return Figures(
        sizes=tuple(sizes),
        reuse=tuple(reuse),
        breaks=breaks,
        invalid=invalid,
        spilled=sum(spilled.values()),
        digest=digest.hexdigest()[:16],
    )


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of ``a`` and ``b``."""
    # Halving search over memcmp'd slices: O(n log n) bytes compared, in C.
    low, high = 0, min(len(a), len(b))
    if a[:high] == b[:high]:
        return high
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
