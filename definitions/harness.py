"""What agent harnesses' tools amount to: which shell commands are a passing glance at
state, and the command a harness's tool call runs.

One table answers two questions: "does this result expire from the model context"
(the economy's expiry, ``engine.Economy(glance=glance)``) and "may a coordinator run
this directly". ``is_ephemeral(command)`` decides a shell command (compound commands
``a && b | c; d`` pass only when every segment does); ``command_of(call)`` is the
command a tool call runs: a shell call's script, or the command a harness's
file-viewing tool amounts to (Claude Code's ``Read`` is ``cat -n PATH``);
``glance(call)`` is both at once, the predicate the economy takes.

Pure, like the kinds beside it: no I/O. It knows harnesses (Claude Code, Codex CLI,
OpenHands, SWE-agent) by their tool names and argument shapes, which is why it lives
here and not in ``engine``: the context's economy takes it as a parameter. Imports
only ``engine``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Final

import msgspec

from engine import ToolCall

__all__ = ["command_of", "glance", "is_ephemeral"]

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


def glance(call: ToolCall) -> str | None:
    """The command ``call`` ran when its result is a passing glance at state (it may
    expire from the context), else ``None``: ``command_of`` and ``is_ephemeral`` at
    once. The economy's ``Economy(glance=...)`` takes this."""
    command = command_of(call)
    return command if command is not None and is_ephemeral(command) else None
