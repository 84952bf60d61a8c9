"""The Gemini and Bedrock rows of ``bench_protocol_sets.py``: each set on every one of
its recordings beside its reference, the AI SDK's own provider in node.

- **ours**: the set's whole ``fold()`` from the body a client receives, parsing
  included (Gemini: the SSE text through ``replay``'s reader; Bedrock: the raw
  ``application/vnd.amazon.eventstream`` bytes through ``definitions.bedrock``), as
  the reference parses its body too; the figure on the decoded event dicts beside it.
- **reference**: ``@ai-sdk/google`` / ``@ai-sdk/amazon-bedrock`` ``doStream`` on the
  same body (a ``fetch`` that answers with it), read to the end, timed per stream
  inside one node process after a warm-up run (``tests/conformance/_oracle_providers.mjs``).

Every recording counts, however short: both sides pay the per-stream set-up (these
recordings are 2 to 76 events). The cassettes' bodies are the real ones as recorded.
"""

from __future__ import annotations

import base64
import copy
import json
import shutil
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from definitions import bedrock, gemini
from replay.logs._formats import parse_events

ROOT = Path(__file__).resolve().parents[1]
ORACLES = ROOT / ".oracles"
SCRIPT = ROOT / "tests" / "conformance" / "_oracle_providers.mjs"


def recordings() -> list[dict[str, Any]]:
    """Every Gemini and Bedrock recording: its protocol, name, events and body."""
    from tests.conformance import _provider_oracles as oracles

    rows = []
    for provider, protocol in (("google", "gemini"), ("bedrock", "bedrock")):
        for param in oracles.recording_names(provider):
            name = param.values[0]
            if name is None:
                continue
            job = oracles.recording_job(provider, name)
            body = job["body"].encode() if provider == "google" else base64.b64decode(job["body"])
            events = parse_events(body, path=name).events
            rows.append(
                {"protocol": protocol, "name": name, "events": events, "body": body, "job": job}
            )
    return rows


def _gemini_from_body(body: bytes) -> object:
    return gemini.PROTOCOL.accumulate(parse_events(body, path=None).events)


def ours(row: dict[str, Any]) -> tuple[Callable[[Any], object], Callable[[], Any]]:
    """What ``fold`` from the body runs on, and how a batch of it is made."""
    body = row["body"]
    if row["protocol"] == "gemini":
        return _gemini_from_body, lambda: body
    return bedrock.PROTOCOL.accumulate, lambda: body


def on_dicts(row: dict[str, Any]) -> tuple[Callable[[Any], object], Callable[[], Any]]:
    fold = (
        gemini.PROTOCOL.accumulate if row["protocol"] == "gemini" else bedrock.PROTOCOL.accumulate
    )
    return fold, partial(copy.deepcopy, row["events"])


def typed_cell(row: dict[str, Any], cell: Any, repeat: int) -> Any:
    """A Gemini row's fold on google-genai's typed responses (what
    ``generate_content_stream`` yields, built before the clock starts), as a ``cell``;
    ``None`` for Bedrock (boto3 yields dicts) or without google-genai."""
    if row["protocol"] != "gemini":
        return None
    try:
        from google.genai import types
    except ImportError:
        return None
    events = row["events"]

    def make() -> list[Any]:
        return [types.GenerateContentResponse.model_validate(event) for event in events]

    return cell(gemini.PROTOCOL.accumulate, len(events), make, repeat)


def node_rates(rows: list[dict[str, Any]]) -> list[float | None]:
    """The provider's events/s per row (its mean time per stream), or ``None`` each when
    node or the oracles' install is missing."""
    if shutil.which("node") is None or not (ORACLES / "node_modules").is_dir():
        print("(the AI SDK provider references need node and <repo>/.oracles installed)")
        return [None] * len(rows)
    shutil.copyfile(SCRIPT, ORACLES / SCRIPT.name)
    jobs = [
        {**row["job"], "repeat": min(2000, max(50, 20_000 // len(row["events"])))} for row in rows
    ]
    done = subprocess.run(
        ["node", str(ORACLES / SCRIPT.name)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=1200,
        check=True,
    )
    results = json.loads(done.stdout)
    return [
        len(row["events"]) / (result["ms"] / 1000) if "ms" in result else None
        for row, result in zip(rows, results, strict=True)
    ]
