"""``convo record``: record every supported SDK client a program creates, with no change
to its code.

``convo record`` runs the program with ``_autorecord/`` first on ``PYTHONPATH``; the
``sitecustomize`` there calls ``install_hooks`` at interpreter start, configured by
environment variables (``CONVO_RECORD_LOG``, or ``CONVO_RECORD_STORE`` with
``CONVO_RECORD_CONVERSATION``). The hooks patch the client classes' constructors when
their modules are first imported (an import hook: a program that never imports an SDK
pays nothing for it), so each client is recorded from birth, all into one recorder.
Nothing here may break the program: a failure is a ``RecordingLostWarning`` on stderr.

When no call was recorded, ``convo record`` says so and why (``nothing_recorded``):
each process that loads the hooks (or finds it cannot import this library) writes one
line to the file ``CONVO_RECORD_REPORT`` names, so a program whose Python never loaded
them (``python -I``, another Python) is told apart from one that made no model call.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ._errors import RecordingLostWarning

__all__ = [
    "DIRECTORY",
    "ENV_CONVERSATION",
    "ENV_LOG",
    "ENV_REPORT",
    "ENV_STORE",
    "calls_in",
    "install_hooks",
    "nothing_recorded",
    "report",
]

DIRECTORY = Path(__file__).with_name("_autorecord")
ENV_LOG = "CONVO_RECORD_LOG"
ENV_STORE = "CONVO_RECORD_STORE"
ENV_CONVERSATION = "CONVO_RECORD_CONVERSATION"
ENV_REPORT = "CONVO_RECORD_REPORT"

# module -> the classes in it whose constructors record the client they build.
_TARGETS: dict[str, tuple[str, ...]] = {
    "anthropic._client": ("Anthropic", "AsyncAnthropic"),
    "openai._client": ("OpenAI", "AsyncOpenAI"),
    "google.genai.client": ("Client",),
}
_BOTOCORE = "botocore.session"

_lock = threading.Lock()
_recorder: Any = None


def _shared_recorder() -> Any:
    """The process's one recorder, opened on first use."""
    global _recorder
    with _lock:
        if _recorder is None:
            from ._recorder import Recorder, open_sink

            store = os.environ.get(ENV_STORE)
            conversation = os.environ.get(ENV_CONVERSATION)
            log = store or os.environ[ENV_LOG]
            _recorder = Recorder(open_sink(log, conversation, store=bool(store)))
        return _recorder


def _record(client: Any) -> None:
    from ._clients import install

    try:
        install(client, recorder=_shared_recorder())
    except Exception as exc:
        warnings.warn(
            RecordingLostWarning(
                f"convo record: {type(client).__qualname__} is not recorded: "
                f"{type(exc).__name__}: {exc}"
            ),
            stacklevel=3,
        )


def _patch_init(cls: type) -> None:
    original = cls.__init__  # type: ignore[misc]

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if not _is_marked(self):  # a subclass's constructor runs this one too
            _record(self)

    cls.__init__ = __init__  # type: ignore[misc]


def _is_marked(client: Any) -> bool:
    from ._clients import recorder_of

    return recorder_of(client) is not None


def _patch_botocore(module: ModuleType) -> None:
    session = module.Session
    original = session.create_client

    @functools.wraps(original)
    def create_client(self: Any, service_name: str, *args: Any, **kwargs: Any) -> Any:
        client = original(self, service_name, *args, **kwargs)
        if service_name == "bedrock-runtime":
            _record(client)
        return client

    session.create_client = create_client


def _patch(name: str, module: ModuleType) -> None:
    if name == _BOTOCORE:
        _patch_botocore(module)
        return
    for attribute in _TARGETS[name]:
        cls = getattr(module, attribute, None)
        if isinstance(cls, type):
            _patch_init(cls)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, name: str) -> None:
        self._inner = inner
        self._name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        try:
            _patch(self._name, module)
        except Exception as exc:
            warnings.warn(
                RecordingLostWarning(f"convo record: cannot instrument {self._name}: {exc}"),
                stacklevel=2,
            )


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the SDK modules as usual, then patches them once they have run."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _TARGETS and fullname != _BOTOCORE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader, fullname)
                return spec
        return None


def install_hooks() -> None:
    """Patch the SDK client classes as their modules are imported (once per process)."""
    if os.environ.get(ENV_LOG) is None and os.environ.get(ENV_STORE) is None:
        return
    report("loaded")
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    for name in [*_TARGETS, _BOTOCORE]:  # already imported (unlikely at start): patch now
        if name in sys.modules:
            _patch(name, sys.modules[name])


def report(line: str) -> None:
    """Append ``line`` (with this process's id) to the report file, if there is one;
    never raises (a report that cannot be written only weakens the final word)."""
    path = os.environ.get(ENV_REPORT)
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:  # one short write with O_APPEND: processes' lines never interleave
            os.write(fd, f"{os.getpid()} {line}\n".encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def calls_in(log: str | None, store: str | None, conversation: str | None) -> int:
    """How many calls the log or store's conversation holds (0 when it is not there)."""
    from ._recorder import recorded_calls

    if store is not None:
        from ..stores._open import open_store

        try:
            with open_store(store, mode="ro") as opened:
                return recorded_calls(opened.read(conversation or ""))
        except Exception:  # not there yet (or unreadable: the run says so itself)
            return 0
    if log is None or not os.path.exists(log):
        return 0
    from ..logs._jsonl import read_log

    return recorded_calls(read_log(log, lenient=True).events())


def nothing_recorded(report_text: str) -> str:
    """Why a run recorded no call, from its report (one line per process that loaded
    the hooks or could not)."""
    lines = [line.partition(" ")[2] for line in report_text.splitlines()]
    failed = [line for line in lines if line.startswith("cannot import")]
    if "loaded" not in lines and failed:
        return f"the program's Python {failed[0]}: install convo-engine in it"
    if not lines:
        return (
            "the program's Python never loaded the recorder: it ignores PYTHONPATH "
            "(python -I or -E), is a Python without convo-engine, or is not Python"
        )
    return (
        "the program made no model call through a supported SDK client (anthropic, "
        "openai, google-genai, boto3 bedrock-runtime), or none could be written"
    )


def environment(
    base: dict[str, str], *, log: str | None, store: str | None, conversation: str | None
) -> dict[str, str]:
    """``base`` with ``_autorecord/`` first on ``PYTHONPATH`` and the recorder configured."""
    env = dict(base)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([str(DIRECTORY), *([path] if path else [])])
    for name, value in ((ENV_LOG, log), (ENV_STORE, store), (ENV_CONVERSATION, conversation)):
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run(command: Sequence[str], env: dict[str, str], runner: Callable[..., Any]) -> int:
    """Run ``command`` with ``env``; its exit status (a signal's as the shell shows it)."""
    status: int = runner(list(command), env=env)
    return 128 - status if status < 0 else status
