"""The AI SDK's Gemini and Bedrock providers as references, and what both sides show.

``run_providers(jobs)`` runs ``@ai-sdk/google`` / ``@ai-sdk/amazon-bedrock`` on recorded
bodies in one node process (``_oracle_providers.mjs``). A provider yields stream parts
(``text-delta``, ``tool-call``, ``finish``, ...), not the protocol's final object, so
both sides are compared through one small projection of what an application reads:
the text, the reasoning, the thought signatures, the tool calls (name, parsed input,
id when the protocol sent one), the raw finish reason and the raw usage.
``*_view(ours)`` projects our rebuilt objects; ``*_sdk_view(parts)`` projects the
provider's parts (from node, or from the AI SDK's own test snapshots, which
``parse_snapshots`` reads).
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from definitions._eventstream import encode_frame
from replay.logs._formats import parse_events
from tests._shared import SHARED, shared_files, shared_path

from . import _node_oracles

_SCRIPT = Path(__file__).with_name("_oracle_providers.mjs")


def oracles_or_skip() -> None:
    """Skip (fail when ``CI=true``) when node or the oracles' install is missing."""
    try:
        _node_oracles.node_oracles()
    except pytest.skip.Exception as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the Node oracles cannot run: {exc}")
        raise


def run_providers(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each job's ``{"parts": [...], "error"?, "ms"?}`` (see ``_oracle_providers.mjs``)."""
    oracles_or_skip()
    return _node_oracles.run_batch(jobs, script=_SCRIPT)


# -- bodies ---------------------------------------------------------------------------


def gemini_sse(chunks: list[dict[str, Any]]) -> str:
    """The chunks as ``streamGenerateContent?alt=sse`` sends them."""
    return "".join(f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks)


def eventstream(events: list[dict[str, Any]]) -> bytes:
    """ConverseStream events as Bedrock's ``application/vnd.amazon.eventstream`` body."""
    body = b""
    for event in events:
        [(key, value)] = event.items()
        kind = "exception" if key.endswith("Exception") else "event"
        name = ":exception-type" if kind == "exception" else ":event-type"
        headers = {name: key, ":content-type": "application/json", ":message-type": kind}
        body += encode_frame(headers, json.dumps(value).encode())
    return body


def job(provider: str, events: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    if provider == "google":
        return {"provider": provider, "body": gemini_sse(events), **extra}
    data = base64.b64encode(eventstream(events)).decode()
    return {"provider": provider, "body": data, **extra}


# -- views ----------------------------------------------------------------------------


def _signature_of(part: dict[str, Any], key: str) -> Any:
    for meta in (part.get("providerMetadata") or {}).values():
        if isinstance(meta, dict) and key in meta:
            return meta[key]
    return None


def _sdk_call(part: dict[str, Any], key: str) -> dict[str, Any]:
    call = {"name": part["toolName"], "input": json.loads(part["input"])}
    if not part["toolCallId"].startswith(("id-", "test-id")):  # ids the oracle made up
        call["id"] = part["toolCallId"]
    signature = _signature_of(part, key)
    if signature is not None:
        call["signature"] = signature
    return call


def gemini_view(response: dict[str, Any]) -> dict[str, Any]:
    """Candidate 0 of a rebuilt response (the AI SDK reads only that one)."""
    candidates = [c for c in response.get("candidates", ()) if c.get("index", 0) == 0]
    candidate = candidates[0] if candidates else {}
    text, reasoning, signatures, calls = [], [], [], []
    for part in (candidate.get("content") or {}).get("parts", ()):
        if "text" in part:
            (reasoning if part.get("thought") else text).append(part["text"])
            if "thoughtSignature" in part:
                signatures.append(part["thoughtSignature"])
        elif "functionCall" in part:
            fc = part["functionCall"]
            call = {"name": fc["name"], "input": fc.get("args") or {}}
            if fc.get("id") is not None:
                call["id"] = fc["id"]
            if "thoughtSignature" in part:
                call["signature"] = part["thoughtSignature"]
            calls.append(call)
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "signatures": signatures,
        "calls": calls,
        "finish": candidate.get("finishReason"),
        "usage": response.get("usageMetadata"),
    }


def gemini_sdk_view(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The same projection of the Google provider's stream parts."""
    text, reasoning, signatures, calls = [], [], [], []
    finish: Any = None
    usage: Any = None
    for part in parts:
        kind = part["type"]
        if kind in ("text-delta", "reasoning-delta"):
            (text if kind == "text-delta" else reasoning).append(part["delta"])
            signature = _signature_of(part, "thoughtSignature")
            if signature is not None:
                signatures.append(signature)
        elif kind == "tool-call":
            calls.append(_sdk_call(part, "thoughtSignature"))
        elif kind == "finish":
            finish = part["finishReason"]["raw"]
            usage = part["usage"].get("raw")
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "signatures": signatures,
        "calls": calls,
        "finish": finish,
        "usage": usage,
    }


def bedrock_view(response: dict[str, Any]) -> dict[str, Any]:
    """A rebuilt Converse response: its blocks, stop reason and usage."""
    blocks = []
    for block in response["output"]["message"]["content"]:
        if "text" in block:
            blocks.append({"text": block["text"]})
        elif "toolUse" in block:
            tool = block["toolUse"]
            blocks.append({"call": tool["name"], "id": tool["toolUseId"], "input": tool["input"]})
        elif "reasoningContent" in block:
            content = block["reasoningContent"]
            if "reasoningText" in content:
                item = {"reasoning": content["reasoningText"]["text"]}
                if "signature" in content["reasoningText"]:
                    item["signature"] = content["reasoningText"]["signature"]
            else:
                item = {"reasoning": "", "redacted": content["redactedContent"]}
            blocks.append(item)
    return {"blocks": blocks, "finish": response.get("stopReason"), "usage": response.get("usage")}


def bedrock_sdk_view(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The same projection of the Bedrock provider's stream parts."""
    blocks: dict[str, dict[str, Any]] = {}
    finish: Any = None
    usage: Any = None
    for part in parts:
        kind = part["type"]
        if kind in ("text-start", "reasoning-start", "tool-input-start"):
            field = {"text-start": "text", "reasoning-start": "reasoning"}.get(kind, "call")
            blocks.setdefault(f"{field}:{part['id']}", {field: ""})
            redacted = _signature_of(part, "redactedData")
            if redacted is not None:
                blocks[f"{field}:{part['id']}"]["redacted"] = redacted
        elif kind == "text-delta":
            blocks[f"text:{part['id']}"]["text"] += part["delta"]
        elif kind == "reasoning-delta":
            block = blocks[f"reasoning:{part['id']}"]
            block["reasoning"] += part["delta"]
            signature = _signature_of(part, "signature")
            if signature is not None:
                block["signature"] = signature
            redacted = _signature_of(part, "redactedData")
            if redacted is not None:
                block["redacted"] = redacted
        elif kind == "reasoning-end":
            redacted = _signature_of(part, "redactedContent")
            if redacted is not None:
                blocks[f"reasoning:{part['id']}"]["redacted"] = redacted
        elif kind == "tool-call":
            call = _sdk_call(part, "signature")
            blocks[f"call:{part['toolCallId']}"] = {
                "call": call["name"],
                "id": part["toolCallId"],
                "input": call["input"],
            }
        elif kind == "finish":
            finish = part["finishReason"]["raw"]
            usage = part["usage"].get("raw")
    return {"blocks": list(blocks.values()), "finish": finish, "usage": usage}


# -- the AI SDK's test snapshots --------------------------------------------------------

_EXPORT = re.compile(r"^exports\[`(.*?)`\] = `\n(.*?)\n`;$", re.S | re.M)
_UNDEFINED = object()


def parse_snapshots(path: Path) -> dict[str, Any]:
    """The values of a vitest ``.snap`` file by snapshot name.

    Vitest prints with pretty-format: one item per line, each followed by ``,``, and
    strings between double quotes with nothing inside escaped; the file escapes
    backslashes and backticks. A string therefore ends at the first ``",`` + newline.
    ``undefined`` values are left out, as ``JSON.stringify`` leaves them out.
    """
    text = path.read_text(encoding="utf-8")
    out = {}
    for name, body in _EXPORT.findall(text):
        body = re.sub(r"\\([\\`$])", r"\1", body)
        value, _ = _value(body + ",\n", 0)
        out[name] = value
    return out


def _skip(text: str, at: int) -> int:
    while text[at] in " \n":
        at += 1
    return at


def _value(text: str, at: int) -> tuple[Any, int]:
    at = _skip(text, at)
    head = text[at]
    if head == '"':
        end = text.index('",\n', at + 1)
        return text[at + 1 : end], end + 1
    if head in "[{":
        closing = "]" if head == "[" else "}"
        items: list[Any] = []
        fields: dict[str, Any] = {}
        at += 1
        while True:
            at = _skip(text, at)
            if text[at] == closing:
                return (items if head == "[" else fields), at + 1
            if head == "{":
                end = text.index('": ', at)
                key = text[at + 1 : end]
                value, at = _value(text, end + 3)
                if value is not _UNDEFINED:
                    fields[key] = value
            else:
                value, at = _value(text, at)
                items.append(value)
            assert text[at] == ",", f"expected ',' at {at}: {text[at - 40 : at + 40]!r}"
            at += 1
    token = re.match(r"[^,\n]+", text[at:])
    assert token is not None
    word = token.group(0)
    literal = {"null": None, "undefined": _UNDEFINED, "true": True, "false": False}
    value = literal[word] if word in literal else json.loads(word)
    return value, at + len(word)


# -- the recordings ---------------------------------------------------------------------

_FOLDERS = {"google": "gemini", "bedrock": "bedrock"}


def _cassette_bodies(path: Path) -> list[bytes]:
    """The response bodies of a VCR cassette (pydantic-ai's, YAML), in order."""
    yaml = pytest.importorskip("yaml", reason="pyyaml (a test extra) reads the VCR cassettes")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    bodies = []
    for interaction in data["interactions"]:
        body = interaction["response"]["body"]["string"]
        bodies.append(body if isinstance(body, bytes) else body.encode("utf-8"))
    return bodies


def recording_names(provider: str) -> list[Any]:
    """Every recording of a provider's folder as pytest params (a cassette gives one per
    interaction, ``name#n``), or one skipped param when ``../shared`` is absent."""
    folder = SHARED / "fixtures" / "recorded" / _FOLDERS[provider]
    if not folder.is_dir():
        return shared_files("fixtures", "recorded", _FOLDERS[provider])
    names = [p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*.chunks.txt"))]
    for cassette in sorted(folder.glob("*.yaml")):
        text = cassette.read_text(encoding="utf-8")
        names += [f"{cassette.name}#{n}" for n in range(1, text.count("- request:") + 1)]
    return [pytest.param(name, id=name) for name in names]


def recording_body(provider: str, name: str) -> bytes:
    """The bytes of one recording as ``recording_names`` named it."""
    folder = shared_path("fixtures", "recorded", _FOLDERS[provider])
    file, _, number = name.partition("#")
    if number:
        return _cassette_bodies(folder / file)[int(number) - 1]
    return (folder / file).read_bytes()


def recording(provider: str, name: str) -> list[Any]:
    """The raw events of one recording, read by replay (JSON Lines, SSE, event stream)."""
    return list(parse_events(recording_body(provider, name), path=name).events)


def recording_job(provider: str, name: str, **extra: Any) -> dict[str, Any]:
    """The oracle job for one recording: a cassette's body as it was sent (SSE text, or
    the event-stream bytes the AI SDK's codec decodes itself), a JSON Lines recording
    framed as the service would send it."""
    if "#" in name:
        body = recording_body(provider, name)
        text = body.decode("utf-8") if provider == "google" else base64.b64encode(body).decode()
        return {"provider": provider, "body": text, **extra}
    return job(provider, recording(provider, name), **extra)


def client_or_skip(module: str) -> Any:
    """An official client's module (a pinned test extra): skip without it, but fail
    when ``CI=true`` (CI installs the test extra)."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {module} (a test extra) is not installed: {exc}")
        pytest.skip(f"{module} is not installed: pip install -e '.[test]'")


def rendered(nodes: Any, definition: Any) -> list[str]:
    """The view as a reader sees it: each node's text."""
    return [definition.render_text(node) for node in nodes]


def provider_results(provider: str, names: list[Any]) -> dict[str, dict[str, Any]]:
    """The provider's result per recording of ``names`` (``recording_names``' params),
    one node process for all; skip when the recordings are absent."""
    listed = [param.values[0] for param in names]
    if listed == [None]:
        pytest.skip(f"the {provider} recordings are absent")
    jobs = [recording_job(provider, name) for name in listed]
    return dict(zip(listed, run_providers(jobs), strict=True))
