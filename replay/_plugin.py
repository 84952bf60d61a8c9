"""The pytest plugin: replay recorded logs in your own tests (entry point ``pytest11``).

Fixtures:

- ``convo_snapshot``: ``convo_snapshot(log)`` replays a log (a path to any recording
  ``load_events`` reads, or the events themselves) and compares the view, rendered
  as indented JSON, with the snapshot stored next to the test in
  ``__snapshots__/<module>/<test>.json``. A missing snapshot is written (and the
  test passes); a different one fails with a unified diff. ``pytest
  --convo-update-snapshots`` rewrites them. Values that change on every re-record
  (provider ids, timestamps, request ids) are masked first (``mask_volatile``), and
  the snapshot names where: ``{"masked": [paths], "nodes": [...]}``.
- ``convo_assert_deterministic``: ``assert_deterministic`` with the seed of
  ``--convo-seed`` (default 0): fails with the first divergence.
- ``convo_recorder``: ``convo_recorder.wrap(client)`` records an official SDK client's
  calls to ``recordings/<module>/<test>.jsonl`` beside the test, or plays them back
  from it, by ``--convo-record-mode`` (``none``, the default, only plays back; ``once``,
  ``new_episodes``, ``all``, ``rewrite`` as pytest-recording defines them).

Both take ``definitions=``: omitted, the protocol is detected from the events as
``convo replay`` does; a protocol module (``definitions.anthropic``), its
``DEFINITIONS`` or a ``definitions.ProtocolSet`` bring the module's pre-pass and routing key
with them, so every recording format and protocol replays as the CLI replays it.

Both are plain functions underneath (``replay.replay``, ``replay.render_json``,
``replay.assert_deterministic``), usable without pytest.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import msgspec
import pytest

from definitions import ProtocolSet
from definitions._protocol import Unrouted
from engine import Node

from ._determinism import WAYS, Report, assert_deterministic
from ._replay import replay
from .protocols._detect import detect_protocol, module_set, protocol_definitions
from .render._common import render_json

# Keys in the order they were given ("masked" before "nodes"), the nodes as render_json
# sorted theirs.
_encode = msgspec.json.Encoder().encode

__all__ = ["ID_KEYS", "TIME_KEYS", "ConvoSnapshot", "mask_volatile"]

_UPDATE = "--convo-update-snapshots"
_written_key = pytest.StashKey[list[Path]]()
_passed_key = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("convo", "convo-engine: replay snapshots")
    group.addoption(
        _UPDATE,
        action="store_true",
        default=False,
        help="rewrite the convo_snapshot files with the views replayed now",
    )
    group.addoption(
        "--convo-record-mode",
        default="none",
        choices=("none", "once", "new_episodes", "all", "rewrite"),
        help="convo_recorder: record model calls or play them back (default none: play back)",
    )
    group.addoption(
        "--convo-seed",
        type=int,
        default=0,
        help="seed of convo_assert_deterministic's random ways (default 0)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_written_key] = []
    config.addinivalue_line(
        "markers",
        "convo_recording(allow_unused=False, cassette=None, strict=False): convo_recorder "
        "options; allow_unused lets the test pass with recorded calls it did not make; "
        "cassette names a VCR.py cassette to play back (relative to the test's folder); "
        "strict tells a null from an absent field",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    # The outcome of the test's own call, for fixtures' teardown: convo_recorder
    # reports a stale recording only for a test that passed (a failure says more).
    report = yield
    if report.when == "call":
        item.stash[_passed_key] = report.passed
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    written = config.stash.get(_written_key, [])
    if written:
        terminalreporter.write_sep("-", "convo snapshots")
        for path in written:
            terminalreporter.write_line(f"wrote {path}")


# -- masking what changes on every re-record ---------------------------------------------

ID_KEYS: Final = frozenset(
    {
        "id",
        "responseId",
        "response_id",
        "request_id",
        "requestId",
        "request-id",
        "x-request-id",
        "system_fingerprint",
        "previous_response_id",
    }
)
"""Keys whose string values of 8 characters or more are ids a provider (or its
gateway) makes anew on every call: masked as ``<id N>``, numbered by first appearance
(equal ids stay equal), and so wherever that value appears, in node keys too."""
TIME_KEYS: Final = frozenset(
    {
        "created",
        "created_at",
        "completed_at",
        "createTime",
        "updateTime",
        "timestamp",
        "retrieved_at",
        "time",
    }
)
"""Keys whose values are when something happened: masked as ``<time>``."""
# Provider ids under any key (a tool call id sent back as tool_use_id, call_id, ...).
_PROVIDER_ID: Final = re.compile(
    r"(?:msg|toolu|srvtoolu|chatcmpl|resp|rs|fc|call|req|ws|ctc|mcpr|ig|cu|lsh)[_-][A-Za-z0-9_-]{8,}"
)
_MIN_ID: Final = 8


def _matches(pattern: str, path: tuple[str, ...]) -> bool:
    """Whether ``path`` (the keys to a value in a node's JSON, ``*`` for list indexes)
    ends with what ``pattern`` names: dotted keys (``usage.input_tokens``; ``*``
    matches any one step), a bare key matching that key anywhere."""
    steps = pattern.split(".")
    if len(steps) > len(path):
        return False
    tail = path[len(path) - len(steps) :]
    return all(s in ("*", p) for s, p in zip(steps, tail, strict=True))


def mask_volatile(
    nodes: list[Any], *, mask: Collection[str] = (), keep: Collection[str] = ()
) -> tuple[list[Any], list[str]]:
    """``nodes`` (a view as ``render_json`` gives it, decoded) with what changes on
    every re-record masked, and the paths masked (sorted, list indexes as ``*``).

    Masked: ids (``ID_KEYS``, and any string shaped like a provider's id: ``msg_...``,
    ``toolu_...``, ``chatcmpl-...``, ``call_...``) as ``<id N>``, numbered by first
    appearance, also where a node's key or id holds them; times (``TIME_KEYS``) as
    ``<time>``; whatever ``mask`` names as ``<masked>``. ``keep`` names what stays
    (it wins). A pattern names the end of a value's path in the node: dotted keys
    (``body.usage``, ``state.message.id``; ``*`` for any one step), or one key,
    wherever it is."""
    ids: dict[str, str] = {}
    masked: set[str] = set()

    def kept(path: tuple[str, ...]) -> bool:
        return any(_matches(p, path) for p in keep)

    def walk(value: Any, path: tuple[str, ...]) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, (*path, str(k))) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, (*path, "*")) for v in value]
        if not path or kept(path):
            return value
        key = path[-1]
        if any(_matches(p, path) for p in mask):
            masked.add(".".join(path))
            return "<masked>"
        if key in TIME_KEYS and value is not None:
            masked.add(".".join(path))
            return "<time>"
        if isinstance(value, str) and (
            (key in ID_KEYS and len(value) >= _MIN_ID) or _PROVIDER_ID.fullmatch(value)
        ):
            masked.add(".".join(path))
            return ids.setdefault(value, f"<id {len(ids) + 1}>")
        return value

    # A node's own fields (key, kind, id, seq) are the engine's: only its state is
    # read for what to mask.
    out = [
        {**node, "state": walk(node["state"], ("state",))}
        if isinstance(node, dict) and "state" in node
        else node
        for node in nodes
    ]
    if ids:  # a node's key and id name what they belong to by those ids: "kind:msg_1/0"
        split = re.compile("([:/])")
        for node in out:
            for field in ("key", "id"):
                if isinstance(node, dict) and isinstance(node.get(field), str):
                    parts = split.split(node[field])
                    node[field] = "".join(ids.get(part, part) for part in parts)
    return out, sorted(masked)


class ConvoSnapshot:
    """The ``convo_snapshot`` fixture: replay a log and compare its view with a snapshot.

    Call it once per view; a test that checks several views names them
    (``name=``), or gets ``.2``, ``.3``, ... after its own name.
    """

    def __init__(self, directory: Path, test: str, *, update: bool, written: list[Path]) -> None:
        self.directory = directory
        self.test = test
        self.update = update
        self._written = written
        self._calls = 0

    def path(self, name: str | None = None) -> Path:
        """The snapshot file of view ``name`` (or of the next unnamed view)."""
        if name is None:
            stem = self.test if self._calls <= 1 else f"{self.test}.{self._calls}"
        else:
            stem = f"{self.test}.{_safe(name)}"
        return self.directory / f"{stem}.json"

    def __call__(
        self,
        log: str | os.PathLike[str] | Iterable[Any],
        definitions: Definitions = None,
        *,
        name: str | None = None,
        event_type: Callable[[Any], Hashable] | None = None,
        mask: Collection[str] = (),
        keep: Collection[str] = (),
    ) -> tuple[Node, ...]:
        """Replay ``log`` through ``definitions`` (default: the detected protocol's),
        mask what changes on every re-record (``mask_volatile``: ``mask`` and ``keep``
        name more to mask, or what to leave), compare the view's JSON with the
        snapshot, and return the nodes."""
        if name is None:
            self._calls += 1
        events = list(_events(log))
        chosen = definition_set(definitions, events)
        route = event_type or chosen.event_type
        nodes = replay(chosen.feed(events), chosen.definitions, event_type=route)
        view = msgspec.json.decode(render_json(nodes, chosen.definitions))
        shown, masked = mask_volatile(view, mask=mask, keep=keep)
        data = _encode({"masked": masked, "nodes": shown})
        self.assert_matches(msgspec.json.format(data, indent=2) + b"\n", name)
        return nodes

    def assert_matches(self, actual: bytes, name: str | None = None) -> None:
        """Compare ``actual`` with the stored snapshot (written when missing or when
        updating); fail with a unified diff otherwise."""
        path = self.path(name)
        if self.update or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_bytes() != actual:
                path.write_bytes(actual)
                self._written.append(path)
            return
        expected = path.read_bytes()
        if expected == actual:
            return
        diff = difflib.unified_diff(
            expected.decode(errors="replace").splitlines(keepends=True),
            actual.decode(errors="replace").splitlines(keepends=True),
            fromfile=f"{path} (snapshot)",
            tofile="replayed now",
        )
        pytest.fail(
            f"the replayed view differs from the snapshot {path}:\n{''.join(diff)}\n"
            f"(run pytest {_UPDATE} to accept the new view)",
            pytrace=False,
        )


Definitions = Iterable[Any] | ModuleType | ProtocolSet | None
"""What the fixtures take as ``definitions``: see the module docstring."""


def definition_set(definitions: Definitions, events: Sequence[Any]) -> ProtocolSet:
    """The set to replay ``events`` with: detected (``None``), a module's, or given
    definitions with the pre-pass and routing key of the module they come from."""
    if definitions is None:
        return protocol_definitions(detect_protocol(events).protocol)
    if isinstance(definitions, ProtocolSet):
        return definitions
    if isinstance(definitions, ModuleType):
        return module_set(definitions)
    given = tuple(definitions)
    module = _set_module(given)
    if module is None or not hasattr(module, "DEFINITIONS"):
        return ProtocolSet(name="the given definitions", definitions=given)
    return module_set(module, given)


def _set_module(definitions: tuple[Any, ...]) -> ModuleType | None:
    """The one module all of ``definitions`` come from, or ``None`` (mixed)."""
    # A protocol set's guard against unrouted events (definitions._protocol.Unrouted)
    # belongs to every set: the set is the module of its other definitions.
    modules = {
        type(definition).__module__
        for definition in definitions
        if not isinstance(definition, Unrouted)
    }
    return sys.modules.get(modules.pop()) if len(modules) == 1 else None


def _cassette(request: pytest.FixtureRequest) -> str:
    """The name pytest-recording gives a test's cassette: ``[Class.]test[params].yaml``."""
    name = request.node.name.replace("/", "-")
    return f"{request.cls.__name__}.{name}.yaml" if request.cls else f"{name}.yaml"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "_"


def _events(log: str | os.PathLike[str] | Iterable[Any]) -> Iterable[Any]:
    if isinstance(log, str | os.PathLike):
        from .logs._formats import load_events  # here, so the plugin loads without the readers

        return load_events(log).events
    return log


@pytest.fixture
def convo_snapshot(request: pytest.FixtureRequest) -> ConvoSnapshot:
    """Replay a recorded log and compare the view with a snapshot next to the test."""
    module = Path(str(request.node.path))
    return ConvoSnapshot(
        module.parent / "__snapshots__" / module.stem,
        _safe(request.node.name),
        update=bool(request.config.getoption(_UPDATE)),
        written=request.config.stash[_written_key],
    )


@pytest.fixture
def convo_assert_deterministic(request: pytest.FixtureRequest) -> Callable[..., Report]:
    """``assert_deterministic(log, definitions=None, ...)`` seeded by ``--convo-seed``:
    the raw events of any recording, the set detected or derived as for snapshots."""
    seed = int(request.config.getoption("--convo-seed"))

    def check(
        log: str | os.PathLike[str] | Iterable[Any],
        definitions: Definitions = None,
        *,
        ways: Collection[str] = WAYS,
        rounds: int = 3,
        event_type: Callable[[Any], Hashable] | None = None,
        prepare: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    ) -> Report:
        events = list(_events(log))
        chosen = definition_set(definitions, events)
        return assert_deterministic(
            events,
            chosen.definitions,
            seed=seed,
            ways=ways,
            rounds=rounds,
            event_type=event_type or chosen.event_type,
            prepare=prepare or chosen.prepare,
        )

    return check


@pytest.fixture
def convo_recorder(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Record a test's model calls beside it, or play them back, by ``--convo-record-mode``:
    ``convo_recorder.wrap(client)`` returns the instrumented client, ``.path`` is the
    recording, ``.recording`` says whether calls go to the network. A test that passes
    without making every recorded call fails at teardown (a stale recording) unless
    marked ``@pytest.mark.convo_recording(allow_unused=True)``."""
    from .recording._pytest import ConvoRecorder  # here: the plugin loads without it

    module = Path(str(request.node.path))
    test = _safe(request.node.name)
    path = module.parent / "recordings" / module.stem / f"{test}.jsonl"
    marker = request.node.get_closest_marker("convo_recording")
    options = {} if marker is None else marker.kwargs
    cassette = options.get("cassette")
    recorder = ConvoRecorder(
        path,
        str(request.config.getoption("--convo-record-mode")),
        # pytest-recording's place for the test's cassette, or the one named
        cassette=module.parent / (cassette or f"cassettes/{module.stem}/{_cassette(request)}"),
        strict=bool(options.get("strict", False)),
    )
    try:
        yield recorder
    finally:
        recorder.close()
    allowed = marker is not None and marker.kwargs.get("allow_unused", False)
    stale = recorder.unused()
    if stale is not None and not allowed and request.node.stash.get(_passed_key, False):
        pytest.fail(stale, pytrace=False)
