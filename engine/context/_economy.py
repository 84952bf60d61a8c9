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
  *expiry* of ephemeral results (``is_ephemeral``) older than the
  ``keep_recent`` latest; *denial pruning* (``ToolResult.denied``, the approval
  kind's decision) keeping the ``keep_denials`` latest; *interruption repair*
  (the result of an interrupted call becomes ``INTERRUPTED``, the call stays);
  *retry debris* dropped; *trim* (off by default) of results of at least
  ``trim_min_chars`` except the ``trim_keep_recent`` latest.
- **Pairing is sacred.** A call and its result leave together; the turn's other
  calls stay; a turn left with no text and no call goes (its reasoning with it:
  reasoning stays with the tool turn it belongs to); turns of one role left
  next to each other are merged, as providers that alternate roles require.

Which commands are ephemeral is one predicate, ``is_ephemeral``: the same table
answers "may a coordinator run this directly" (a glance). Compound commands
(``a && b | c; d``) pass only when every segment does. A call is asked about
through ``command_of``: a shell call's script, or the command a harness's
file-viewing tool amounts to (Claude Code's ``Read`` is ``cat -n PATH``).
"""

from __future__ import annotations

import hashlib
import re
import shlex
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
    "command_of",
    "economize",
    "is_ephemeral",
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
    def none(cls) -> Economy:
        """No policy: the conversation as recorded (only what validity needs)."""
        return cls(spill_threshold=0, load_time=False)

    @classmethod
    def live(cls) -> Economy:
        """What a running agent gets: spill at entry only (prefix-stable)."""
        return cls(load_time=False)

    @classmethod
    def resume(cls) -> Economy:
        """Spill at entry and the load-time defaults (trim off)."""
        return cls()


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


# -- the ephemeral commands --------------------------------------------------------------

# Read-only programs whose output is a glance at state, cheap to get again.
_PROGRAMS: Final = frozenset(
    {
        "ls", "pwd", "cat", "head", "wc", "grep", "egrep", "fgrep", "rg", "tree", "stat",
        "file", "which", "type", "echo", "printf", "date", "whoami", "du", "df", "nl",
        "uniq", "cut", "basename", "dirname", "realpath", "readlink", "true", "cd", "diff",
        "tail", "sed", "find", "sort", "git", "jq", "id", "uname", "hostname",
    }
)  # fmt: skip
_GIT: Final = frozenset(
    {
        "status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "remote",
        "describe", "blame", "shortlog", "tag", "stash", "grep", "ls-tree", "cat-file",
    }
)  # fmt: skip
# Options that make an otherwise read-only program write, follow or run something.
_WRITING: Final[dict[str, frozenset[str]]] = {
    "sed": frozenset({"-i", "--in-place", "-e", "--expression", "-f", "--file"}),
    "find": frozenset({"-exec", "-execdir", "-delete", "-ok", "-okdir", "-fprint", "-fprintf"}),
    "sort": frozenset({"-o", "--output"}),
    "tail": frozenset({"-f", "-F", "--follow"}),
    "rg": frozenset({"--pre"}),
    "tree": frozenset({"-o"}),
    "date": frozenset({"-s", "--set"}),
    "file": frozenset({"-C", "--compile"}),
}
# sed is a glance only with a script that prints ("1,220p", "/def /p") or substitutes
# ("s|a|b|g") and no more: its w, W and e commands and s///w write files or run programs.
_SED_PRINT: Final = re.compile(
    r"((\d+|\$|/[^/]*/)(,(\d+|\$|/[^/]*/))?)?p"  # print lines
    r"|s(?P<d>[^\\\n\w ])(?:(?!(?P=d))[^\\]|\\.)*(?P=d)(?:(?!(?P=d))[^\\]|\\.)*(?P=d)[gpiI\d]*"
)  # or substitute, with no w or e flag
# Environment a glance may set: what changes messages and formats, never a program.
_HARMLESS_ENV: Final = re.compile(r"(LC_[A-Z]+|LANG|LANGUAGE|TZ|NO_COLOR|TERM|COLUMNS)=")
_GIT_WRITING: Final[dict[str, frozenset[str]]] = {
    "branch": frozenset({"-d", "-D", "-m", "-M", "-c", "-C", "--delete", "--move", "--copy"}),
    "tag": frozenset({"-d", "-a", "-s", "-f", "--delete"}),
    "remote": frozenset({"add", "remove", "rm", "rename", "set-url", "prune", "update"}),
    "stash": frozenset({"push", "pop", "apply", "drop", "clear", "save", "store", "create"}),
}
# -c is not among them: a config value can name a pager or an alias that runs anything.
_GIT_VALUED: Final = frozenset({"-C", "--git-dir", "--work-tree"})
_OPERATORS: Final = ("&&", "||", ";", "|", "\n")
_SAFE_REDIRECT: Final = re.compile(r"(?:[12]?>&[12]|[12]?>\s*/dev/null)(?![\w/.-])")


def is_ephemeral(command: str) -> bool:
    """Whether ``command``'s output is a passing glance at state (``git status``,
    ``ls``, ``cat``, ...): it expires from the context, and a coordinator may run
    it directly. Compound commands pass only when every segment does; command
    substitution, output redirection to a file and anything unparsable do not.
    """
    segments = _segments(command)
    return bool(segments) and all(map(_glance, segments))  # type: ignore[arg-type]


def _segments(command: str) -> list[list[str]] | None:
    """The segments between ``&&``, ``||``, ``;``, ``|`` and newlines, as words;
    ``None`` for what a glance never is: a substitution, an output redirection
    other than to the other stream or ``/dev/null``, unbalanced quotes."""
    out: list[list[str]] = []
    buffer: list[str] = []
    quote = ""
    i = 0
    while i < len(command):
        c = command[i]
        if quote:
            if c == "\\" and quote == '"':
                buffer.append(command[i : i + 2])
                i += 2
                continue
            if c == quote:
                quote = ""
            elif quote == '"' and (c == "`" or command.startswith("$(", i)):
                return None
            buffer.append(c)
            i += 1
            continue
        if c == "\\":
            buffer.append(command[i : i + 2])
            i += 2
            continue
        if c in "'\"":
            quote = c
        elif c == "`" or command.startswith(("$(", "<(", ">("), i):
            return None
        elif c in "12>" and (safe := _SAFE_REDIRECT.match(command, i)):
            buffer.append(" ")  # a stream merged or discarded: nothing written
            i = safe.end()
            continue
        elif c == ">":
            return None  # output written to a file: not a glance
        else:
            operator = next((op for op in _OPERATORS if command.startswith(op, i)), None)
            if operator is not None:
                if not _flush(buffer, out):
                    return None
                buffer = []
                i += len(operator)
                continue
        buffer.append(c)
        i += 1
    if quote or not _flush(buffer, out):
        return None
    return out


def _flush(buffer: list[str], out: list[list[str]]) -> bool:
    try:
        words = shlex.split("".join(buffer))
    except ValueError:
        return False
    if words:
        out.append(words)
    return True


def _glance(words: list[str]) -> bool:
    first = words[0]
    if "=" in first:  # FOO=bar cmd: only an environment that cannot name a program
        return bool(_HARMLESS_ENV.match(first)) and len(words) > 1 and _glance(words[1:])
    program = first.rsplit("/", 1)[-1]
    if "/" in first and first not in (f"/bin/{program}", f"/usr/bin/{program}"):
        return False  # ./ls or ~/bin/cat: some other program of that name
    if program not in _PROGRAMS:
        return False
    args = words[1:]
    if program == "git":
        return _git_glance(args)
    if program == "hostname" and any(not a.startswith("-") for a in args):
        return False  # sets the host name
    writing = _WRITING.get(program)
    if writing is not None and any(_flag(arg) in writing for arg in args):
        return False
    if program == "sed":
        scripts = [a for a in args if not a.startswith("-")][:1]
        return bool(scripts) and _SED_PRINT.fullmatch(scripts[0]) is not None
    return True


def _flag(arg: str) -> str:
    # -i.bak and --in-place=.bak are -i and --in-place
    if arg.startswith("--"):
        return arg.split("=", 1)[0]
    return arg[:2] if arg.startswith("-") and len(arg) > 2 and arg[1] == "i" else arg


def _git_glance(args: list[str]) -> bool:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in _GIT_VALUED and rest:
            rest.pop(0)
        elif option not in ("--no-pager", "-P") and option not in _GIT_VALUED:
            return False
    if not rest or rest[0] not in _GIT:
        return False
    sub, tail = rest[0], rest[1:]
    if any(t.startswith(("--output", "--ext-diff", "--textconv", "--open-files")) for t in tail):
        return False  # writes a file, or runs a configured program
    if sub == "grep" and any(t.startswith("-O") for t in tail):
        return False  # opens the files found in a pager it names
    if sub == "stash":
        return tail[:1] in (["list"], ["show"])
    writing = _GIT_WRITING.get(sub)
    if writing is None:
        return True
    if sub in ("branch", "tag"):
        # listing only: options, no name to create
        return all(t.startswith("-") and t not in writing for t in tail)
    return not any(t in writing for t in tail)


_SHELLS: Final = frozenset(
    {"bash", "shell", "execute_bash", "exec_command", "local_shell", "run_shell_command"}
)
_SHELL_PROGRAMS: Final = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh"})


def _lines(path: object, first: int | None, last: int | None) -> list[object]:
    """The command printing lines ``first`` to ``last`` of ``path`` (``None``: its
    first or last line), or the whole file when both are ``None``."""
    if first is None and last is None:
        return ["cat", "-n", path]
    span = f"{1 if first is None else first},{'$' if last is None else last}p"
    return ["sed", "-n", span, path]


def _read(arguments: dict[str, object]) -> list[object]:
    offset, limit = arguments.get("offset"), arguments.get("limit")
    first = offset if type(offset) is int else None
    last = (1 if first is None else first) + limit - 1 if type(limit) is int else None
    return _lines(arguments.get("file_path"), first, last)


def _editor_view(arguments: dict[str, object]) -> list[object] | None:
    if arguments.get("command") != "view":
        return None
    lines = arguments.get("view_range")
    if isinstance(lines, list) and len(lines) == 2 and all(type(n) is int for n in lines):
        return _lines(arguments.get("path"), lines[0], None if lines[1] == -1 else lines[1])
    return _lines(arguments.get("path"), None, None)


# Harness tools that are a read-only shell command under another name (Claude Code's
# Read, LS, Glob and Grep; OpenHands' editor viewing a file; SWE-agent's find_file):
# the command each amounts to, so that is_ephemeral decides their results as well.
_FILE_TOOLS: Final[dict[str, Callable[[dict[str, object]], list[object] | None]]] = {
    "Read": _read,
    "LS": lambda a: ["ls", a.get("path")],
    "Glob": lambda a: ["find", a.get("path") or ".", "-name", a.get("pattern")],
    "Grep": lambda a: ["rg", a.get("pattern"), a.get("path") or "."],
    "str_replace_editor": _editor_view,
    "find_file": lambda a: ["find", a.get("dir") or ".", "-name", a.get("file_name")],
}


def command_of(call: ToolCall) -> str | None:
    """The shell command a call runs, or ``None`` when it is not a shell call (its
    tool is a shell by name and its arguments hold a ``command``; an argv such as
    Codex's ``["bash", "-lc", "ls"]`` gives the script; a harness's file-viewing
    tool gives the command it amounts to, such as ``cat -n PATH`` for a ``Read``)."""
    tool = _FILE_TOOLS.get(call.name)
    if call.name.lower() not in _SHELLS and tool is None:
        return None
    try:
        arguments = msgspec.json.decode(call.arguments)
    except msgspec.DecodeError:
        return None
    if not isinstance(arguments, dict):
        return None
    if tool is not None:
        argv = tool(arguments)
        if argv is None or not all(isinstance(word, str) and word for word in argv):
            return None
        return shlex.join(str(word) for word in argv)
    command = arguments.get("command", arguments.get("cmd"))
    if isinstance(command, list) and all(isinstance(w, str) for w in command):
        if len(command) >= 3 and command[0] in _SHELL_PROGRAMS and command[1] in ("-c", "-lc"):
            return str(command[2])
        return shlex.join(command)
    return command if isinstance(command, str) else None


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
            command = command_of(index.calls[call_id]) or ""
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
    if economy.expire:
        ephemeral = [
            r.call_id
            for _, _, r in results
            if r.call_id not in pruned
            and r.call_id not in repaired
            and isinstance(r.content, str)
            and _ephemeral_call(index.calls.get(r.call_id))
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


def _ephemeral_call(call: ToolCall | None) -> bool:
    command = None if call is None else command_of(call)
    return command is not None and is_ephemeral(command)


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
