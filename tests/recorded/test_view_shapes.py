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
import re
from html import unescape
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from definitions import recorded
from replay.render._html import render_html
from replay.render._text import render_text
from tests._shared import shared_path
from tests.conformance._python_oracles import anthropic_messages, openai_chat, openai_responses

WORDS = st.text("abcdefgh ", min_size=1, max_size=12).map(lambda s: s.strip() or "w")
ENDINGS = st.sampled_from(["", " ", "\n", "\n\n", "\n- "])


def recording(
    api: str,
    *,
    events: list[dict[str, Any]] | None = None,
    body: Any = None,
    request: Any = None,
    url: str = "",
) -> list[Any]:
    """One call of ``api``: the user's question, then the stream or the whole body;
    ``request``, the request's body (default: the question to model "m"), sent to
    ``url`` when given."""
    streamed = events is not None
    if request is None:
        request = {"model": "m", "messages": [{"role": "user", "content": "question"}]}
    head = {"type": "recording/request", "call": 0, "api": api, "body": request}
    out: list[dict[str, Any]] = [
        {**head, "stream": streamed, **({"url": url} if url else {})},
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


Block = tuple[dict[str, Any], list[dict[str, Any]]]


@st.composite
def anthropic_blocks(draw: st.DrawFn) -> list[Block]:
    """Content blocks (start payload, deltas) in source order: texts (some cited,
    some ending mid-line or with a list marker), thinking, tool uses, server tools."""
    blocks: list[Block] = []
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


def anthropic_events(blocks: list[Block], stop: str) -> list[dict[str, Any]]:
    """One message streamed block after block (start payload, deltas), then ``stop``."""
    message: dict[str, Any] = {
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
    for index, (start, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    delta = {"stop_reason": stop, "stop_sequence": None}
    events.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 9}})
    events.append({"type": "message_stop"})
    return events


@st.composite
def anthropic_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One message with a stop reason."""
    stop = draw(st.sampled_from(["end_turn", "tool_use", "refusal", "max_tokens"]))
    return anthropic_events(draw(anthropic_blocks()), stop)


@pytest.mark.slow
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
    # The page reads alike too: a sentence citations split is one paragraph either way.
    assert page_text(html_view(recording("anthropic.messages", events=events))) == page_text(page)


def page_text(page: str) -> str:
    """The text a reader sees of a page's conversation: tags out, each run of
    whitespace one space (hidden nodes are empty)."""
    body = page[page.index('<div class="conversation">') :]
    return " ".join(unescape(re.sub(r"<[^>]*>", " ", body)).split())


def test_a_cited_sentence_stays_on_its_line() -> None:
    cited = {"type": "text", "text": "", "citations": []}
    blocks: list[Block] = [
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "It is "}]),
        (cited, [{"type": "citations_delta", "citation": citation(1)}]),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": " today."}]),
    ]
    blocks[1][1].append({"type": "text_delta", "text": "sunny"})
    events = anthropic_events(blocks, "end_turn")
    for view in (
        text_view(recording("anthropic.messages", events=events)),
        text_view(recording("anthropic.messages", body=anthropic_messages(events)[0])),
    ):
        assert "It is sunny [Source 1 <https://example.com/1>] today." in view


def test_a_cited_sentence_is_one_paragraph_in_html() -> None:
    """Each block is a node of its own, rendered alone: the page joins the blocks that
    continue a sentence into the first one's paragraph, the citations inline, and
    the others show nothing but keep the turn (the bubble after them joins it)."""
    cited = {"type": "text", "text": "", "citations": []}
    blocks: list[Block] = [
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "It is "}]),
        (cited, [{"type": "citations_delta", "citation": citation(1)}]),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": " today & "}]),
        ({**cited}, [{"type": "citations_delta", "citation": citation(2)}]),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": ".\n\n## Next\n"}]),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Later."}]),
    ]
    blocks[1][1].append({"type": "text_delta", "text": "*sunny*"})
    blocks[3][1].append({"type": "text_delta", "text": "warm"})
    events = anthropic_events(blocks, "end_turn")
    link = '<a class="cite" href="https://example.com/{0}" rel="noopener noreferrer nofollow" '
    link += 'title="quoted">Source {0}</a>'
    sentence = (
        f'<p>It is <em>sunny</em> <span class="citations inline">{link.format(1)}</span> '
        f'today &amp; warm <span class="citations inline">{link.format(2)}</span>.</p>\n'
        "<!--b--><h2>Next</h2>"
    )
    streamed = html_view(recording("anthropic.messages", events=events))
    whole = html_view(recording("anthropic.messages", body=anthropic_messages(events)[0]))
    for page in (streamed, whole):
        assert sentence in page
        assert page.count('class="msg" data-role="assistant"') == 2  # the sentence, "Later."
    shown = re.findall(r'<article [^>]*data-seq="(\d)"([^>]*)>', streamed)
    assert [(seq, attributes) for seq, attributes in shown if seq in "234567"] == [
        ("2", ' data-turn="assistant"'),
        *((seq, ' data-turn="assistant" hidden') for seq in "3456"),
        ("7", ' data-turn="assistant"'),
    ]


PIECE = st.text("ab <&\ue000\ue0017", min_size=0, max_size=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(PIECE, st.booleans()), min_size=1, max_size=5))
def test_a_split_sentence_reads_whole_with_each_citation_after_its_piece(
    pieces: list[tuple[str, bool]],
) -> None:
    """Whatever the pieces hold (markup, the private-use characters the renderer
    marks citations with), the paragraph reads as their texts joined, each cited
    piece's source right after it, escaped; with and without markdown-it."""
    from definitions import _render

    cited = [
        (text, _render.cite_link(f"https://e.example/{n}", f"<S{n}>") if cite else "")
        for n, (text, cite) in enumerate(pieces)
    ]
    # A citation goes after its piece's text, before the space or line break ending it.
    said = "".join(
        f"{text.rstrip()} <S{n}>{text[len(text.rstrip()) :]}" if cite else text
        for n, (text, cite) in enumerate(pieces)
    )
    want = " ".join(said.split())

    def read(html: str) -> str:
        return " ".join(unescape(re.sub(r"<[^>]*>", "", html)).split())

    html = _render.cited_markdown(cited)
    assert "<S" not in html  # every title escaped
    assert read(html) == want
    plain = _render._markdown_it
    try:
        _render._markdown_it = lambda: None  # type: ignore[assignment]
        html = _render.cited_markdown(cited)
    finally:
        _render._markdown_it = plain
    assert read(html) == want


def test_a_real_cited_answer_reads_as_it_was_written() -> None:
    """A real web-search answer (the AI SDK's recording): its sentences split by
    citations read whole, each citation where it was, streamed or whole, on the page
    and in the terminal; the blocks between them (a space, a heading) keep their text."""
    path = shared_path(
        "fixtures", "recorded", "vercel-anthropic-anthropic-web-search-tool.1.chunks.txt"
    )
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    [message] = anthropic_messages(events)
    cite = r'<span class="citations inline"><a class="cite" [^>]*>The all-new Apple Ginza'
    cite += r"[^<]*</a></span>"
    sentence = re.compile(
        rf"<p>Apple today announced [^<]* 10 a\.m\. JST\. {cite} Opened in 2003 [^<]* space\. "
        rf"{cite}</p>\n<!--b--><h2>Recent Apple Product Updates</h2>"
    )
    source = "Tokyo - Apple <https://www.apple.com/newsroom/2025/09/the-all-new-apple-ginza-opens"
    said = re.compile(
        rf"10 a\.m\. JST\. \[The all-new [^\]]*{source}[^\]]*\] Opened in 2003 [^\n]* space\. "
        rf"\[[^\]]*\]\n\n## Recent Apple Product Updates\n"
    )
    # A list whose items citations split off: one list, each item's source in it.
    item = r'<li>{}[^<]* <span class="citations inline"><a class="cite" [^>]*>📰 Major'
    item += r"[^<]*</a></span></li>"
    listed = re.compile(
        r"<p>Key highlights include:</p>\n<ul>\n"
        + "\n".join(item.format(word) for word in ("Microsoft", "Oracle", "Google"))
        + "\n</ul>"
    )
    for log in (
        recording("anthropic.messages", events=events),
        recording("anthropic.messages", body=message),
    ):
        page = html_view(log)
        assert sentence.search(page)
        assert listed.search(page)
        assert said.search(text_view(log))


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


# -- AWS Bedrock Converse ------------------------------------------------------------------


def test_a_bedrock_answer_is_headed_by_the_model_its_request_named() -> None:
    """Bedrock's answer names no model, streamed or whole: its request's path does
    (``/model/{modelId}/converse-stream``). A real cassette (pydantic-ai's), and the
    AI SDK's real stream and whole answer recorded under such a path."""
    from replay import load_events

    cassette = shared_path(
        "fixtures",
        "recorded",
        "bedrock",
        "pydantic-ai-test_bedrock_model_thinking_part_stream.yaml",
    )
    model = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    events = load_events(cassette).events
    assert f"\nassistant ({model}) [end_turn]\n" in text_view(events)
    assert f'<span class="role">assistant</span><span class="model">{model}</span>' in (
        html_view(events)
    )
    folder = shared_path("fixtures", "recorded", "bedrock")
    stream = [
        json.loads(line)
        for line in (folder / "amazon-bedrock-text.chunks.txt").read_text().splitlines()
        if line.strip()
    ]
    whole = json.loads((folder / "amazon-bedrock-text.json").read_text())
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-pro-v1%3A0/converse"
    request = {"messages": [{"role": "user", "content": [{"text": "question"}]}]}
    for log in (
        recording("bedrock.converse", events=stream, request=request, url=f"{url}-stream"),
        recording("bedrock.converse", body=whole, request=request, url=url),
    ):
        assert "\nassistant (amazon.nova-pro-v1:0) [end_turn]\n" in text_view(log)
        assert '<span class="model">amazon.nova-pro-v1:0</span>' in html_view(log)


# -- a live page ------------------------------------------------------------------------------


def test_a_live_page_redraws_a_call_card_when_its_result_arrives() -> None:
    """The result comes in a later request, a node of its own: the renderer's join
    names the call's node as changed, so a live page sends its card again, done."""
    from pathlib import Path

    from replay.logs._formats import load_events
    from replay.render._html import HtmlRenderer

    events = load_events(Path(__file__).parent / "weather.jsonl").events
    request = next(
        i for i, e in enumerate(events) if e["type"] == "recording/request" and e["call"] == 1
    )
    renderer = HtmlRenderer(recorded.DEFINITIONS)
    before = recorded.PROTOCOL.replay(events[:request])
    renderer.render_nodes(before)
    [call] = [n for n in before if n.kind == "anthropic_block" and "tool_use" in str(n.state)]
    assert 'data-status="called"' in renderer.fragment(call)
    after = recorded.PROTOCOL.replay(events[: request + 1])
    assert call.key in renderer.join(after)
    assert 'data-status="done"' in renderer.fragment(call)

    # The server's hub sends it: the request's notification carries the call's node.
    from engine import ManualScheduler, Registration
    from replay import protocol_definitions
    from replay.serve._app import _Folded

    chosen = protocol_definitions("recorded")
    registration = Registration(chosen.definitions, event_type=chosen.event_type)
    hub = _Folded("c", lambda first: (chosen, registration), ManualScheduler())
    hub.fold(events[:request], 0)
    hub.fold(events[request : request + 1], request)
    assert hub.engine is not None
    hub.engine.flush()
    entry = hub._entry(next(n for n in hub.current() if n.key == call.key), None)
    assert 'data-status="done"' in entry["html"]
    latest = hub._latest
    assert latest is not None
    assert call.key in {node.key for node, _ in latest[2]}


def test_a_live_page_redraws_a_sentence_as_its_cited_pieces_stream() -> None:
    """Each piece of a cited sentence streams into a node of its own: the renderer's
    join names the sentence's first node as changed, so a live page sends its
    paragraph again, each time with the text so far, the later pieces hidden."""
    from replay.render._html import HtmlRenderer

    blocks: list[Block] = [
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "It is "}]),
        (
            {"type": "text", "text": "", "citations": []},
            [
                {"type": "citations_delta", "citation": citation(1)},
                {"type": "text_delta", "text": "sun"},
                {"type": "text_delta", "text": "ny"},
            ],
        ),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": " today."}]),
    ]
    events = recording("anthropic.messages", events=anthropic_events(blocks, "end_turn"))
    renderer = HtmlRenderer(recorded.DEFINITIONS)
    head = "anthropic_block:call-0/msg_1/0"
    engine = recorded.PROTOCOL.engine()
    states: dict[str, object] = {}
    seen = []
    for event in events:  # as a live server folds them: one by one, told what changed
        engine.push(event)
        nodes = engine.nodes()
        changed = [n for n in nodes if states.get(n.key) is not n.state]
        states = {n.key: n.state for n in nodes}
        if head in renderer.join(nodes, changed):  # what the server sends again
            [first] = [n for n in nodes if n.key == head]
            seen.append(page_text(f'<div class="conversation">{renderer.fragment(first)}'))
    assert seen == [
        "assistant It is",  # the cited block starts: it joins the sentence
        "assistant It is Source 1",  # its citation comes before its text
        "assistant It is sun Source 1",
        "assistant It is sunny Source 1",
        "assistant It is sunny Source 1",  # the next block starts, empty
        "assistant It is sunny Source 1 today.",
    ]


@settings(max_examples=40, deadline=None)
@given(st.lists(anthropic_blocks(), min_size=1, max_size=3))
def test_a_live_join_is_the_join_of_the_whole_view(messages: list[list[Block]]) -> None:
    """However the cited answers stream (several, one after another), the join kept up
    to date from each change is the one a fresh renderer makes of the whole view."""
    from replay.render._html import HtmlRenderer

    events: list[dict[str, Any]] = []
    for n, blocks in enumerate(messages):
        streamed = anthropic_events(blocks, "end_turn")
        streamed[0] = {**streamed[0], "message": {**streamed[0]["message"], "id": f"msg_{n}"}}
        events += streamed
    live = HtmlRenderer(recorded.DEFINITIONS)
    engine = recorded.PROTOCOL.engine()
    states: dict[str, object] = {}
    for event in recording("anthropic.messages", events=events):
        engine.push(event)
        nodes = engine.nodes()
        changed = [n for n in nodes if states.get(n.key) is not n.state]
        states = {n.key: n.state for n in nodes}
        live.join(nodes, changed)
        whole = HtmlRenderer(recorded.DEFINITIONS)
        whole.join(nodes)
        assert live._joins == whole._joins
        assert live._paragraphs.heads == whole._paragraphs.heads


class _Piece:
    """A kind whose nodes' state is ``(joins, text)``: any node may start or stop
    joining the one before it, which no provider's stream does."""

    kind = "piece"

    def joins(self, node: Any) -> bool:
        return bool(node.state[0])

    def text_piece(self, node: Any) -> tuple[str, str] | None:
        return (node.state[1], "") if node.state[1] else None  # "": no text to join


@attrs.frozen
class _Node:
    key: str
    state: tuple[bool, str]
    kind: str = "piece"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.booleans(), st.sampled_from(["a", "b", ""]))))
def test_paragraphs_kept_up_to_date_are_those_of_the_whole_view(
    steps: list[tuple[int, bool, str]],
) -> None:
    """Each step sets one node's state (a new node when past the last), the join told
    only of it; the join then is the one read from the whole view."""
    from replay.render._common import Paragraphs

    live = Paragraphs([_Piece()])
    nodes: list[_Node] = []
    for at, joins, text in steps:
        node = _Node(f"piece:{min(at, len(nodes))}", (joins, text))
        if at < len(nodes):
            nodes[at] = node
        else:
            nodes.append(node)
        live.of(nodes, [node])
        whole = Paragraphs([_Piece()])
        whole.of(nodes)
        assert (live.joined, live.heads) == (whole.joined, whole.heads)


# -- OpenAI Responses -------------------------------------------------------------------------


@st.composite
def responses_items(draw: st.DrawFn, index: int) -> tuple[dict[str, Any], list[Any], Any]:
    """An output item (added payload, its events, done payload): a message whose
    parts are text with URL citations or a refusal, a function call, reasoning, or a
    web search."""
    item_id = f"it_{index}"
    base = {"output_index": index, "item_id": item_id}
    kind = draw(st.sampled_from(["message", "function_call", "reasoning", "web_search"]))
    lane: list[dict[str, Any]] = []
    if kind == "message":
        added: dict[str, Any] = {"id": item_id, "type": "message", "role": "assistant"}
        added |= {"status": "in_progress", "content": []}
        content: list[dict[str, Any]] = []
        for part_index in range(draw(st.integers(1, 2))):
            where = {**base, "content_index": part_index}
            text = draw(WORDS)
            if draw(st.booleans()):
                part: dict[str, Any] = {"type": "refusal", "refusal": ""}
                lane.append({"type": "response.content_part.added", **where, "part": part})
                lane.append({"type": "response.refusal.delta", **where, "delta": text})
                lane.append({"type": "response.refusal.done", **where, "refusal": text})
                content.append({"type": "refusal", "refusal": text})
                continue
            part = {"type": "output_text", "text": "", "annotations": []}
            lane.append({"type": "response.content_part.added", **where, "part": part})
            lane.append(
                {"type": "response.output_text.delta", **where, "delta": text, "logprobs": []}
            )
            lane.append({"type": "response.output_text.done", **where, "text": text})
            cites = [
                {
                    "type": "url_citation",
                    "url": f"https://example.com/{index}/{n}",
                    "title": f"Page {n}",
                    "start_index": 0,
                    "end_index": len(text),
                }
                for n in range(draw(st.integers(0, 2)))
            ]
            content.append({**part, "text": text, "annotations": cites})
        done = {**added, "status": "completed", "content": content}
    elif kind == "function_call":
        arguments = json.dumps({"q": draw(WORDS)})
        added = {"id": item_id, "type": "function_call", "status": "in_progress"}
        added |= {"arguments": "", "call_id": f"call_{index}", "name": f"tool{index}"}
        lane.append({"type": "response.function_call_arguments.delta", **base, "delta": arguments})
        lane.append(
            {"type": "response.function_call_arguments.done", **base, "arguments": arguments}
        )
        done = {**added, "status": "completed", "arguments": arguments}
    elif kind == "reasoning":
        added = {"id": item_id, "type": "reasoning", "summary": []}
        done = {**added, "summary": [{"type": "summary_text", "text": draw(WORDS)}]}
    else:
        added = {"id": item_id, "type": "web_search_call", "status": "in_progress"}
        lane.append({"type": "response.web_search_call.searching", **base})
        action = {"type": "search", "query": draw(WORDS)}
        done = {**added, "status": "completed", "action": action}
    return added, lane, done


@st.composite
def responses_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One response, its items one after another, completed or incomplete."""
    response = {"id": "resp_1", "object": "response", "created_at": 1700000000}
    response |= {"model": "gpt-test", "status": "in_progress", "output": [], "tools": []}
    response |= {"temperature": 1, "top_p": 1, "parallel_tool_calls": True}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    items = [draw(responses_items(index)) for index in range(draw(st.integers(1, 4)))]
    for index, (added, lane, done) in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        events += lane
        events.append({"type": "response.output_item.done", "output_index": index, "item": done})
    end = draw(st.sampled_from(["completed", "incomplete"]))
    final = {**response, "status": end, "output": [done for _, _, done in items]}
    events.append({"type": f"response.{end}", "response": final})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(responses_streams())
def test_responses_streamed_and_whole_answers_read_alike(events: list[dict[str, Any]]) -> None:
    [result] = openai_responses(events)  # ResponseStreamState: the whole answer
    # The SDK gives none for an incomplete response: the body is then the one its
    # last event carries, as a non-streamed call returns it.
    response = result["final"] or events[-1]["response"]
    streamed = text_view(recording("openai.responses", events=events))
    whole = text_view(recording("openai.responses", body=response))
    assert streamed == whole
    status = "" if response["status"] == "completed" else f" [{response['status']}]"
    at = whole.index(f"assistant (gpt-test){status}")
    for item in response["output"]:
        if item["type"] == "message":
            for part in item["content"]:
                if part["type"] == "refusal":
                    at = whole.index(f"[refusal] {part['refusal']}", at)
                    continue
                at = whole.index(part["text"], at)
                for cite in part["annotations"]:
                    assert f"[{cite['title']} <{cite['url']}>]" in whole[at:]
        elif item["type"] == "function_call":
            at = whole.index(f"tool {item['name']} [{item['call_id']}] completed", at)
        elif item["type"] == "web_search_call":
            at = whole.index("[web_search_call]", at)


# -- echoed history ------------------------------------------------------------------------


def test_a_rewritten_history_keeps_its_block_order() -> None:
    """A request that rewrites the conversation shows the messages it sends, each
    with its parts in the order it has them (text, thinking, calls interleaved)."""
    first = {
        "model": "m",
        "messages": [{"role": "user", "content": "one"}],
    }
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "before"},
            {"type": "tool_use", "id": "toolu_9", "name": "look", "input": {}},
            {"type": "text", "text": "after"},
        ],
    }
    rewritten = {"model": "m", "messages": [{"role": "user", "content": "two"}, assistant]}
    events = [
        {"type": "recording/request", "call": 0, "api": "anthropic.messages", "body": first},
        {"type": "recording/request", "call": 1, "api": "anthropic.messages", "body": rewritten},
    ]
    view = text_view(events)
    assert view.index("assistant: before") < view.index("tool look [toolu_9] called")
    assert view.index("tool look [toolu_9] called") < view.index("assistant: after")


# -- long content ------------------------------------------------------------------------


def test_long_content_is_folded_in_the_terminal_and_collapsed_in_html() -> None:
    """A 200 KB user message is folded to its first lines (``--full``: whole), and
    collapsed on the page; the answer after it is shown whole either way."""
    pasted = "\n".join(f"line {n} of the pasted file" for n in range(8_000))
    body = {"model": "m", "messages": [{"role": "user", "content": pasted}]}
    answer: dict[str, Any] = {
        "role": "assistant",
        "model": "claude-test",
        "stop_reason": "end_turn",
    }
    answer["content"] = [{"type": "text", "text": "A short answer."}]
    events = [
        {"type": "recording/request", "call": 0, "api": "anthropic.messages", "body": body},
        {"type": "recording/body", "call": 0, "body": answer},
    ]
    nodes = recorded.PROTOCOL.replay(events)
    folded = render_text(nodes, recorded.DEFINITIONS, color=False, full=False)
    assert "line 39 of the pasted file" in folded
    assert "line 40 of the pasted file" not in folded
    left = len(pasted) - pasted.index("\nline 40 ")
    assert f"… {left:,} more characters (7,960 lines) folded: --full shows them" in folded
    assert folded.endswith("A short answer.\n")
    whole = render_text(nodes, recorded.DEFINITIONS, color=False)
    assert "line 7999 of the pasted file" in whole
    page = render_html(nodes, recorded.DEFINITIONS)
    assert '<details class="long"><summary>line 0 of the pasted file …' in page
    assert "A short answer." in page
