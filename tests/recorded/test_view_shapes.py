"""The view of an answer is the same streamed or whole, for every shape it can take.

Hypothesis generates Anthropic messages and Chat Completions with the shapes a view
used to lose or misplace: text split by citations (mid-sentence, or a list item's
text after its marker), thinking, tool calls and server tools (web search with its
results) interleaved in any order, refusals, max-token and content-filter stops, and
several choices. The official accumulators (the ``anthropic`` and ``openai`` SDKs,
through ``../shared/oracles``) fold each stream into the answer a non-streamed call
returns; both are recorded as one call each, and the two views must read alike. Then
the view itself is checked against the answer: each block's text in source order,
each citation's source shown, one card per tool call carrying its result, the stop.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import recorded
from replay.render._html import render_html
from replay.render._text import render_text
from tests.conformance._python_oracles import anthropic_messages, openai_chat

WORDS = st.text("abcdefgh ", min_size=1, max_size=12).map(lambda s: s.strip() or "w")
ENDINGS = st.sampled_from(["", " ", "\n", "\n\n", "\n- "])


def recording(
    api: str, *, events: list[dict[str, Any]] | None = None, body: Any = None
) -> list[Any]:
    """One call of ``api``: the user's question, then the stream or the whole body."""
    streamed = events is not None
    request = {"model": "m", "messages": [{"role": "user", "content": "question"}]}
    out: list[dict[str, Any]] = [
        {"type": "recording/request", "call": 0, "api": api, "body": request, "stream": streamed},
        {"type": "recording/response", "call": 0, "status": 200, "headers": {}},
    ]
    if events is not None:
        out += [{"type": "recording/event", "call": 0, "event": e} for e in events]
    else:
        out.append({"type": "recording/body", "call": 0, "body": body})
    out.append({"type": "recording/end", "call": 0, "complete": True})
    return out


def text_view(events: list[Any]) -> str:
    return render_text(recorded.PROTOCOL.replay(events), recorded.DEFINITIONS, color=False)


def html_view(events: list[Any]) -> str:
    return render_html(recorded.PROTOCOL.replay(events), recorded.DEFINITIONS)


# -- Anthropic Messages -------------------------------------------------------------------


def citation(n: int) -> dict[str, Any]:
    return {
        "type": "web_search_result_location",
        "url": f"https://example.com/{n}",
        "title": f"Source {n}",
        "cited_text": "quoted",
        "encrypted_index": "x",
    }


@st.composite
def anthropic_blocks(draw: st.DrawFn) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Content blocks (start payload, deltas) in source order: texts (some cited,
    some ending mid-line or with a list marker), thinking, tool uses, server tools."""
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for n in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["text", "text", "cited", "thinking", "tool", "search"]))
        if kind in ("text", "cited"):
            text = draw(WORDS) + draw(ENDINGS)
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas: list[dict[str, Any]] = []
            if kind == "cited":
                start["citations"] = []
                deltas.append({"type": "citations_delta", "citation": citation(n)})
            deltas.append({"type": "text_delta", "text": text})
            blocks.append((start, deltas))
        elif kind == "thinking":
            thought = [{"type": "thinking_delta", "thinking": draw(WORDS)}]
            thought.append({"type": "signature_delta", "signature": "sig"})
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, thought))
        elif kind == "tool":
            start = {"type": "tool_use", "id": f"toolu_{n}", "name": f"tool{n}", "input": {}}
            args = json.dumps({"q": draw(WORDS)})
            blocks.append((start, [{"type": "input_json_delta", "partial_json": args}]))
        else:
            use = {"type": "server_tool_use", "id": f"srvtoolu_{n}", "name": "web_search"}
            query = json.dumps({"query": draw(WORDS)})
            blocks.append(
                ({**use, "input": {}}, [{"type": "input_json_delta", "partial_json": query}])
            )
            results = [
                {"type": "web_search_result", "url": f"https://r.example/{n}/{i}", "title": f"R{i}"}
                for i in range(draw(st.integers(0, 2)))
            ]
            result = {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{n}"}
            blocks.append(({**result, "content": results}, []))
    return blocks


@st.composite
def anthropic_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One message streamed block after block, with a stop reason."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for index, (start, deltas) in enumerate(draw(anthropic_blocks())):
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    stop = draw(st.sampled_from(["end_turn", "tool_use", "refusal", "max_tokens"]))
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 9},
        }
    )
    events.append({"type": "message_stop"})
    return events


@settings(max_examples=60, deadline=None)
@given(anthropic_streams())
def test_anthropic_streamed_and_whole_answers_read_alike(events: list[dict[str, Any]]) -> None:
    [message] = anthropic_messages(events)  # the SDK's accumulator: the whole answer
    streamed = text_view(recording("anthropic.messages", events=events))
    whole = text_view(recording("anthropic.messages", body=message))
    assert streamed == whole
    assert f"assistant (claude-test) [{message['stop_reason']}]" in whole
    # Each block in source order; citations' sources shown; a tool card per call,
    # a server tool's results on its card, never as a block of their own.
    at = whole.index("assistant (")
    for block in message["content"]:
        kind = block["type"]
        if kind == "text" and block["text"].strip(" \n-"):
            shown = block["text"].strip(" \n-").split("\n")[0]
            at = whole.index(shown, at)
            for cite in block.get("citations") or ():
                assert f"[{cite['title']} <{cite['url']}>]" in whole[at:]
        elif kind == "thinking":
            at = whole.index(f"[thinking] {block['thinking']}", at)
        elif kind in ("tool_use", "server_tool_use"):
            at = whole.index(f"tool {block['name']} [{block['id']}] ", at)
        elif kind == "web_search_tool_result":
            for result in block["content"]:
                assert f"- {result['title']} <{result['url']}>" in whole
    assert "web_search_tool_result" not in whole
    searches = [b for b in message["content"] if b["type"] == "web_search_tool_result"]
    page = html_view(recording("anthropic.messages", body=message))
    uses = [b for b in message["content"] if b["type"] in ("tool_use", "server_tool_use")]
    assert page.count('<details class="tool"') == len(uses)
    assert page.count('<details class="tool" data-status="done"') == len(searches)


def test_a_cited_sentence_stays_on_its_line() -> None:
    events = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        *[
            e
            for index, (start, deltas) in enumerate(
                [
                    ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "It is "}]),
                    (
                        {"type": "text", "text": "", "citations": []},
                        [
                            {"type": "citations_delta", "citation": citation(1)},
                            {"type": "text_delta", "text": "sunny"},
                        ],
                    ),
                    ({"type": "text", "text": ""}, [{"type": "text_delta", "text": " today."}]),
                ]
            )
            for e in [
                {"type": "content_block_start", "index": index, "content_block": start},
                *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
                {"type": "content_block_stop", "index": index},
            ]
        ],
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        {"type": "message_stop"},
    ]
    view = text_view(recording("anthropic.messages", events=events))
    assert "It is sunny [Source 1 <https://example.com/1>] today." in view


# -- OpenAI Chat Completions ----------------------------------------------------------------


@st.composite
def chat_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One completion of one or two choices: text, a refusal, tool calls, a finish
    reason (a content filter's stop with nothing said too)."""
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
    }
    chunks: list[dict[str, Any]] = []
    for index in range(draw(st.integers(1, 2))):

        def chunk(delta: dict[str, Any], finish: str | None = None, i: int = index) -> Any:
            return {**base, "choices": [{"index": i, "delta": delta, "finish_reason": finish}]}

        chunks.append(chunk({"role": "assistant"}))
        finish = draw(st.sampled_from(["stop", "length", "tool_calls", "content_filter"]))
        said = draw(st.sampled_from(["text", "refusal", "nothing"]))
        if said == "text":
            chunks.append(chunk({"content": draw(WORDS)}))
        elif said == "refusal":
            chunks.append(chunk({"refusal": draw(WORDS)}))
        for n in range(draw(st.integers(0, 2)) if finish == "tool_calls" else 0):
            call = {"index": n, "id": f"call_{index}_{n}", "type": "function"}
            call["function"] = {"name": f"tool{n}", "arguments": json.dumps({"q": n})}
            chunks.append(chunk({"tool_calls": [call]}))
        chunks.append(chunk({}, finish))
    return chunks


@settings(max_examples=60, deadline=None)
@given(chat_streams())
def test_chat_streamed_and_whole_answers_read_alike(chunks: list[dict[str, Any]]) -> None:
    completion = openai_chat(chunks)  # ChatCompletionStreamState: the whole answer
    streamed = text_view(recording("openai.chat", events=chunks))
    whole = text_view(recording("openai.chat", body=completion))
    assert streamed == whole
    choices = completion["choices"]
    assert whole.split("\n\n")[1].startswith("assistant (gpt-test)")
    for choice in choices:
        message = choice["message"]
        if len(choices) > 1:
            assert f"[choice {choice['index']}: {choice['finish_reason']}]" in whole
        elif choice["finish_reason"] != "stop":
            assert f"assistant (gpt-test) [{choice['finish_reason']}]" in whole
        if message.get("content"):
            assert message["content"] in whole
        if message.get("refusal"):
            assert f"[refusal] {message['refusal']}" in whole
        for call in message.get("tool_calls") or ():
            assert f"tool {call['function']['name']} [{call['id']}] called" in whole
        nothing = not (
            message.get("content") or message.get("refusal") or message.get("tool_calls")
        )
        if choice["finish_reason"] == "content_filter" and nothing:
            assert "content filter stopped the answer" in whole


def test_a_filtered_answer_with_no_message_is_shown() -> None:
    """Azure's content filter: a choice with no message at all, only its finish reason."""
    body = {
        "id": "chatcmpl-1",
        "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "content_filter", "message": None}],
    }
    view = text_view(recording("openai.chat", body=body))
    assert "assistant (gpt-4o) [content_filter]" in view
    assert "[the provider's content filter stopped the answer]" in view
