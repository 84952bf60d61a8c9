"""The recording's wire rules: the SSE and event-stream parsers give the same events
however the body is split into chunks, playback's framing parses back to the same
records, and nothing secret survives in a URL or the headers kept."""

from __future__ import annotations

import gzip
import itertools
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from definitions._eventstream import encode_frame
from replay.logs._secrets import kept_headers, kept_url
from replay.recording._wire import BodyParser, frames

SSE = "text/event-stream"
EVENTSTREAM = "application/vnd.amazon.eventstream"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
events = st.lists(
    st.tuples(st.sampled_from(["", "message_start", "delta"]), json_values), max_size=8
)


def parse(content_type: str, body: bytes, cuts: list[int], encoding: str = "") -> list[Any]:
    parser = BodyParser(0, content_type, encoding)
    out: list[Any] = []
    at = 0
    for cut in [*sorted({c % (len(body) + 1) for c in cuts}), len(body)]:
        out += parser.feed(body[at:cut])
        at = cut
    out += parser.close()
    return msgspec.json.decode(msgspec.json.encode(out))  # Raw events as objects


def sse_body(items: list[tuple[str, Any]], newline: str) -> bytes:
    text = "".join(
        (f"event: {name}{newline}" if name else "") + f"data: {json.dumps(value)}{newline * 2}"
        for name, value in items
    )
    return (": a comment" + newline * 2 + text + "data: [DONE]" + newline * 2).encode()


def expected(items: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, value in items:
        record: dict[str, Any] = {"type": "recording/event", "call": 0, "event": value}
        if name:
            record["sse"] = name
        out.append(record)
    return [*out, {"type": "recording/event", "call": 0, "done": True}]


@pytest.mark.slow
@given(
    events, st.lists(st.integers(min_value=0), max_size=6), st.sampled_from(["\n", "\r\n", "\r"])
)
def test_sse_events_do_not_depend_on_the_chunking(
    items: list[tuple[str, Any]], cuts: list[int], newline: str
) -> None:
    assert parse(SSE, sse_body(items, newline), cuts) == expected(items)


@pytest.mark.slow
@given(events, st.lists(st.integers(min_value=0), max_size=6))
def test_a_gzipped_stream_is_recorded_decoded(
    items: list[tuple[str, Any]], cuts: list[int]
) -> None:
    body = gzip.compress(sse_body(items, "\n"))
    assert parse(SSE, body, cuts, "gzip") == expected(items)


@pytest.mark.slow
@given(
    st.lists(
        st.tuples(st.sampled_from(["messageStart", "contentBlockDelta"]), json_values), max_size=6
    ),
    st.lists(st.integers(min_value=0), max_size=6),
)
def test_eventstream_frames_do_not_depend_on_the_chunking(
    items: list[tuple[str, Any]], cuts: list[int]
) -> None:
    body = b"".join(
        encode_frame({":message-type": "event", ":event-type": name}, json.dumps(value).encode())
        for name, value in items
    )
    records = parse(EVENTSTREAM, body, cuts)
    assert records == [
        {"type": "recording/event", "call": 0, "event": {name: value}} for name, value in items
    ]


@pytest.mark.slow
@given(events)
def test_playback_framing_parses_back_to_the_records(items: list[tuple[str, Any]]) -> None:
    records = expected(items)
    for content_type in (SSE, EVENTSTREAM):
        if content_type == EVENTSTREAM:
            records = [
                {"type": "recording/event", "call": 0, "event": {name or "x": value}}
                for name, value in items
            ]
        body = b"".join(frames(content_type, records))
        assert parse(content_type, body, []) == records


def test_a_body_that_is_not_json_is_kept_as_text() -> None:
    assert parse("text/plain", b"Bad Gateway", [3]) == [
        {"type": "recording/body", "call": 0, "text": "Bad Gateway"}
    ]


def test_urls_lose_userinfo_and_secret_parameters() -> None:
    url = (
        "https://user:pw@generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent"
        "?alt=sse&key=AIzaSECRET&X-Amz-Signature=abc&X-Amz-Credential=AKIA&api_key=k"
    )
    assert kept_url(url) == (
        "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse"
    )


def test_only_harmless_headers_are_kept() -> None:
    sent = [
        ("Authorization", "Bearer sk"),
        ("x-api-key", "sk-ant"),
        ("api-key", "azure"),
        ("x-goog-api-key", "AIza"),
        ("Cookie", "c"),
        ("Proxy-Authorization", "p"),
        ("X-Amz-Date", "20260101T000000Z"),
        ("X-Amz-Security-Token", "tok"),
        ("x-amz-content-sha256", "abc"),
        ("anthropic-version", "2023-06-01"),
        ("Content-Type", "application/json"),
    ]
    assert kept_headers(sent, response=False) == {
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    received = [("set-cookie", "s"), ("request-id", "req_1"), ("x-amzn-RequestId", "r")]
    assert kept_headers(received, response=True) == {
        "request-id": "req_1",
        "x-amzn-requestid": "r",
    }


def reference_sse(body: bytes) -> list[dict[str, Any]]:
    """The SSE records of ``body`` read line by line, as the SSE specification reads a
    stream: the model the parser's frame-at-a-time reading is held to."""
    out: list[dict[str, Any]] = []
    name, data = "", []
    lines = body.decode().replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for line in [*lines, ""]:
        if not line:
            if data:
                record: dict[str, Any] = {"type": "recording/event", "call": 0}
                text = "\n".join(data)
                if text == "[DONE]":
                    record["done"] = True
                else:
                    if name:
                        record["sse"] = name
                    try:
                        record["event"] = json.loads(text)
                    except ValueError:
                        record["text"] = text
                out.append(record)
            name, data = "", []
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    return out


sse_lines = st.lists(
    st.one_of(
        st.builds(lambda n: f"event: {n}", st.sampled_from(["", "a", "delta"])),
        st.builds(lambda n: f"event:{n}", st.sampled_from(["a", "delta"])),
        st.builds(lambda v: f"data: {json.dumps(v)}", json_values),
        st.builds(lambda v: f"data:{json.dumps(v)}", json_values),
        st.sampled_from(["data: [DONE]", "data: not json", "data: ", ": a comment", "id: 7"]),
        st.just(""),
    ),
    max_size=24,
)


@pytest.mark.slow
@given(sse_lines, st.lists(st.integers(min_value=0), max_size=6), st.sampled_from(["\n", "\r\n"]))
def test_any_sse_stream_reads_as_the_specification_reads_it(
    lines: list[str], cuts: list[int], newline: str
) -> None:
    """Frames of any shape (names with or without a space, several data lines, comments,
    other fields, stray blank lines), cut anywhere, give what reading line by line
    gives."""
    body = newline.join(lines).encode()
    assert parse(SSE, body, cuts) == reference_sse(body)


def one_by_one(content_type: str, chunks: list[bytes]) -> list[tuple[int, Any]]:
    """Each chunk fed alone: its events, with the chunk's index."""
    parser = BodyParser(0, content_type)
    return [(n, event) for n, chunk in enumerate(chunks) for event in parser.feed(chunk)]


@given(
    st.lists(
        st.tuples(st.sampled_from(["", "delta"]), json_values, st.sampled_from(["", ": ping"])),
        max_size=8,
    ),
    st.lists(st.integers(min_value=0), max_size=8),
    st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=4),
    st.sampled_from(["\n", "\n\n", "\r\n"]),
)
def test_a_batch_of_chunks_gives_each_event_its_chunk_time(
    items: list[tuple[str, Any, str]], cuts: list[int], batches: list[int], extra: str
) -> None:
    """``feed_many`` over batches of chunks gives the events feeding them one by one
    gives, each stamped with the time of the chunk that completed it: with frames split
    anywhere, comments, blank lines beyond a frame's end and CRs."""
    newline = "\r\n" if extra == "\r\n" else "\n"
    body = "".join(
        (f"{comment}{newline}{newline}" if comment else "")
        + (f"event: {name}{newline}" if name else "")
        + f"data: {json.dumps(value)}{newline}{extra if extra != chr(13) + chr(10) else newline}"
        for name, value, comment in items
    ).encode()
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    chunks = [body[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    expected_runs = one_by_one(SSE, chunks)
    parser = BodyParser(0, SSE)
    got: list[tuple[int, Any]] = []
    start, sizes = 0, iter(batches * len(chunks))
    while start < len(chunks):
        size = next(sizes)
        batch = chunks[start : start + size]
        for at, events in parser.feed_many(batch, [float(start + i) for i in range(len(batch))]):
            got += [(int(at), event) for event in events]
        start += size
    assert [n for n, _ in got] == [n for n, _ in expected_runs]
    as_objects = msgspec.json.decode(msgspec.json.encode([e for _, e in got]))
    assert as_objects == msgspec.json.decode(msgspec.json.encode([e for _, e in expected_runs]))
    assert len(got) == len(items)


def test_a_body_that_cannot_be_parsed_stops_the_batch_with_the_error() -> None:
    good = encode_frame({":message-type": "event", ":event-type": "a"}, b"{}")
    bad = bytearray(good)
    bad[-1] ^= 0xFF  # the message's checksum fails
    parser = BodyParser(0, EVENTSTREAM)
    runs = parser.feed_many([good, bytes(bad), good], [1.0, 2.0, 3.0])
    assert msgspec.json.decode(msgspec.json.encode(runs)) == [
        [1.0, [{"type": "recording/event", "call": 0, "event": {"a": {}}}]]
    ]
    assert parser.error is not None
    assert parser.feed_many([good], [4.0]) == []
