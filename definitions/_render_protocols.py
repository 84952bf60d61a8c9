"""HTML for the protocols' own objects: an Anthropic content block, a Responses output
item, a Chat Completions choice, an AI SDK part, an AG-UI message.

The protocol definition sets render the final objects their ``accumulate()`` returns, so
each shape is drawn once, here, with the blocks of ``_render``: text as a Markdown
bubble, calls as tool cards, reasoning folded, results and citations as links.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

from ._render import (
    Outcome,
    bubble,
    call_card,
    call_key,
    carried,
    cite_link,
    cited_markdown,
    code,
    continued,
    folded,
    line,
    list_item_text,
    long_text,
    markdown,
    paragraph,
    payload,
    plain,
    sources,
    text_follows,
    tool_card,
    tool_text,
)


def _citations(citations: Iterable[Any], *, inline: bool = False) -> str:
    """Citations as small links after the text, one per source, the quote on hover:
    a row under it, or ``inline`` in its sentence."""
    seen: dict[object, str] = {}
    for cite in citations:
        if not isinstance(cite, Mapping):
            continue
        url = cite.get("url") or cite.get("document_title") or cite.get("title")
        if url in seen:
            continue
        title = cite.get("title") or cite.get("document_title") or cite.get("url") or "source"
        seen[url] = cite_link(cite.get("url"), title, str(cite.get("cited_text") or ""))
    if not seen:
        return ""
    if inline:
        return f'<span class="citations inline">{"".join(seen.values())}</span>'
    return f'<div class="citations">{"".join(seen.values())}</div>'


def _results(label: str, results: Iterable[Any]) -> str:
    """Search results (dicts with url, title and an age or snippet) as a folded list."""
    items = [
        (r.get("url"), r.get("title") or r.get("url"), r.get("page_age") or "")
        for r in results
        if isinstance(r, Mapping)
    ]
    return folded(f"{label} ({len(items)} results)", sources(items), cls="results")


def results_text(kind: str, content: object) -> str | None:
    """A ``*_tool_result`` holding search results as lines ``- title <url>``, else None."""
    if not kind.endswith("_tool_result") or not isinstance(content, list) or not content:
        return None
    if not all(isinstance(item, Mapping) and "url" in item for item in content):
        return None
    label = kind.removesuffix("_tool_result").replace("_", " ")
    lines = [f"{label}: {len(content)} results"]
    lines += [f"  - {item.get('title') or item['url']} <{item['url']}>" for item in content]
    return "\n".join(lines)


def _rest(value: Mapping[str, Any], *drop: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in ("type", "id", *drop)}


# -- Anthropic Messages ----------------------------------------------------------------


def anthropic_block(
    block: Mapping[str, Any],
    *,
    stopped: bool,
    streamed: object = None,
    marker: str = "",
    usage: object = None,
) -> str:
    """One content block of a message, as rebuilt by the fold; ``streamed`` is its
    text as streamed (a ``StreamedText``, rendered incrementally) when it has one;
    ``marker`` the list marker it carries (``BlockState.marker``); ``usage`` a
    compaction block's own iteration usage (``compaction_usage``)."""
    kind = str(block.get("type"))
    if kind == "text":
        if continued():  # shown in the paragraph of the block before
            return ""
        if paragraph():  # blocks after it continue its sentence
            return bubble("assistant", cited_markdown(paragraph()))
        text: object = block.get("text", "") if streamed is None else streamed
        cites = _citations(block.get("citations") or ())
        if marker or stopped:  # a streaming text keeps its incremental rendering
            text = list_item_text(str(text), marker)
        if not (str(text).strip() or cites):
            return ""
        return bubble("assistant", (markdown(text) if text else "") + cites)
    if kind == "thinking":
        summary = "Thinking" if stopped else "Thinking …"
        thought = block.get("thinking", "") if streamed is None else streamed
        return folded(summary, markdown(thought), cls="reasoning")
    if kind == "redacted_thinking":
        return folded("Thinking (redacted)", plain("[redacted by the provider]"), cls="reasoning")
    if kind == "compaction":
        from .compaction import row_html

        return row_html(*_anthropic_compaction(block, usage))
    if "input" in block or kind.endswith("tool_use"):
        status = "called" if stopped else "streaming"
        return call_card(_tool_name(block), block.get("id"), status, arguments=block.get("input"))
    content = block.get("content")
    if kind.endswith("_tool_result"):
        if carried(block.get("tool_use_id")):
            return ""
        tool = kind.removesuffix("_tool_result")
        if (
            isinstance(content, list)
            and content
            and all(isinstance(c, Mapping) and "url" in c for c in content)
        ):
            return _results(tool.replace("_", " "), content)
        failed = isinstance(content, Mapping) and str(content.get("type", "")).endswith("error")
        if failed and isinstance(content, Mapping):
            error = content.get("error_code") or payload(_rest(content))
            return tool_card(tool, "error", error=error)
        return tool_card(tool, "result", result=content)
    return tool_card(kind, "", result=_rest(block))


def anthropic_text_piece(block: Mapping[str, Any]) -> tuple[str, str] | None:
    """A text block as a piece of the text a citation split: its text as written
    (the pieces joined are the answer's text, list markers in place) and its
    citations inline; ``None`` for another block."""
    if block.get("type") != "text":
        return None
    return str(block.get("text", "")), _citations(block.get("citations") or (), inline=True)


def _tool_name(block: Mapping[str, Any]) -> str:
    server = block.get("server_name")
    kind = str(block.get("type"))
    return f"{server}: {block.get('name')}" if server else str(block.get("name") or kind)


def anthropic_block_text(
    block: Mapping[str, Any], marker: str = "", *, stopped: bool = True, usage: object = None
) -> str:
    """One content block as text: text (its citations' sources after it), thinking,
    calls as tool lines (their joined result under them), results left to their call;
    ``usage`` as ``anthropic_block``'s."""
    kind = str(block.get("type"))
    if kind == "text":
        return long_text(list_item_text(str(block.get("text", "")), marker)) + cited_text(
            block.get("citations") or ()
        )
    if kind == "thinking":
        return f"[thinking] {long_text(block.get('thinking', ''))}"
    if kind == "redacted_thinking":
        return "[thinking redacted by the provider]"
    if kind == "compaction":
        from .compaction import row_text

        return row_text(*_anthropic_compaction(block, usage))
    if "input" in block or kind.endswith("tool_use"):
        status = "called" if stopped else "streaming"
        return tool_text(_tool_name(block), block.get("id"), status, block.get("input"))
    if kind.endswith("_tool_result") and carried(block.get("tool_use_id")):
        return ""
    found = results_text(kind, block.get("content"))
    if found is not None:
        return found
    return f"[{kind}] {payload(_rest(block))}"


def _anthropic_compaction(block: Mapping[str, Any], usage: object) -> tuple[str, str]:
    """A compaction block's summary and figures, for its row (``content`` null: the
    compaction failed, a no-op the server ignores); ``usage`` its iteration's."""
    from .compaction import pass_tokens

    content = block.get("content")
    figures = [pass_tokens(usage)]
    if content is None:
        figures.append("failed: no summary")
    elif block.get("encrypted_content"):
        figures.append("encrypted state kept")
    return str(content or ""), ", ".join(f for f in figures if f)


def compaction_usage(usage: object) -> dict[str, Any] | None:
    """The compaction iteration of an Anthropic message's ``usage`` (its first
    ``iterations`` entry of type ``compaction``; the beta API's per-iteration usage),
    or ``None``."""
    iterations = usage.get("iterations") if isinstance(usage, Mapping) else None
    for entry in iterations if isinstance(iterations, list) else ():
        if isinstance(entry, dict) and entry.get("type") == "compaction":
            return entry
    return None


def anthropic_calls(block: Mapping[str, Any]) -> tuple[str, ...]:
    """The call id a content block shows a card for (a client or server tool use)."""
    call_id = block.get("id")
    kind = str(block.get("type"))
    if isinstance(call_id, str) and ("input" in block or kind.endswith("tool_use")):
        return (call_id,)
    return ()


def anthropic_results(block: Mapping[str, Any]) -> tuple[tuple[str, Outcome], ...]:
    """A server tool's result block as the outcome of its call (``tool_use_id``)."""
    kind = str(block.get("type"))
    call_id = block.get("tool_use_id")
    if not kind.endswith("_tool_result") or not isinstance(call_id, str):
        return ()
    content = block.get("content")
    if isinstance(content, Mapping) and str(content.get("type", "")).endswith("error"):
        error = content.get("error_code") or payload(_rest(content))
        return ((call_id, Outcome("failed", error)),)
    if (
        isinstance(content, list)
        and content
        and all(isinstance(c, Mapping) and "url" in c for c in content)
    ):
        links = tuple(
            (c.get("url"), c.get("title") or c.get("url"), c.get("page_age") or "") for c in content
        )
        return ((call_id, Outcome("done", content, links=links)),)
    if isinstance(content, Mapping) and "url" in content:  # a web fetch: the page
        document = content.get("content")
        source = document.get("source") if isinstance(document, Mapping) else None
        text = source.get("data") if isinstance(source, Mapping) else None
        title = document.get("title") if isinstance(document, Mapping) else None
        link = ((content.get("url"), title or content.get("url"), ""),)
        return ((call_id, Outcome("done", text if isinstance(text, str) else "", links=link)),)
    if (
        isinstance(content, list)
        and content
        and all(isinstance(c, Mapping) and c.get("type") == "text" for c in content)
    ):  # an MCP tool's text
        said = "".join(str(c.get("text", "")) for c in content)
        return ((call_id, Outcome("failed" if block.get("is_error") else "done", said)),)
    if isinstance(content, Mapping) and "stdout" in content:  # code execution
        said = str(content.get("stdout") or "") + str(content.get("stderr") or "")
        failed = content.get("return_code") not in (0, None)
        return ((call_id, Outcome("failed" if failed else "done", said)),)
    return ((call_id, Outcome("done", content)),)


def cited_text(citations: Iterable[Any]) -> str:
    """A text's citations as text after it: `` [title <url>]``, one per source."""
    seen: dict[object, str] = {}
    for cite in citations:
        if not isinstance(cite, Mapping):
            continue
        url = cite.get("url")
        key = url or cite.get("document_title") or cite.get("title")
        if key in seen:
            continue
        title = cite.get("title") or cite.get("document_title") or url or "source"
        seen[key] = f" [{title} <{url}>]" if url else f" [{title}]"
    return "".join(seen.values())


_BAD_STOPS: Final = frozenset(
    {"refusal", "max_tokens", "length", "content_filter", "SAFETY", "PROHIBITED_CONTENT"}
)


def heading_text(role: object, model: object, stop: object = None) -> str:
    """An answer's heading line: ``assistant (model) [stop reason]``."""
    parts = [str(role or "assistant")] + ([f"({model})"] if model else [])
    if stop:
        parts.append(f"[{stop}]")
    return " ".join(parts)


def _tokens(usage: object, given: str, taken: str) -> dict[str, Any]:
    """A provider's usage object as ``heading_html`` reads it (Anthropic's names)."""
    if not isinstance(usage, Mapping):
        return {}
    return {"input_tokens": usage.get(given), "output_tokens": usage.get(taken)}


def heading_html(
    role: object, model: object, stop: object, usage: Mapping[str, Any] | None = None
) -> str:
    """An answer's metadata row: role, model, stop reason (unless a plain end) and
    token counts (``input_tokens``/``output_tokens`` or Chat's ``prompt``/``completion``)."""
    tokens = ""
    usage = usage if isinstance(usage, Mapping) else {}
    given = usage.get("input_tokens", usage.get("prompt_tokens"))
    taken = usage.get("output_tokens", usage.get("completion_tokens"))
    if taken is not None:
        tokens = f"{given or 0:,} in · {taken:,} out"
    plain_end = stop in ("end_turn", "stop", "STOP", "completed", "tool_calls", None)
    bad = stop in _BAD_STOPS
    return line(
        "meta",
        ("role", role or "assistant"),
        ("model", model),
        ("decision", "" if plain_end else stop),
        ("tokens", tokens),
        status="error" if bad else "",
    )


def anthropic_message(message: Mapping[str, Any], stop: object, usage: Mapping[str, Any]) -> str:
    """A message's metadata row: role, model, stop reason and token counts."""
    return heading_html(message.get("role"), message.get("model"), stop, usage)


# -- OpenAI Responses --------------------------------------------------------------------


def responses_item(item: Mapping[str, Any]) -> str:
    """One output item of a response, as rebuilt by the fold."""
    kind = str(item.get("type"))
    status = str(item.get("status") or "")
    if kind == "message":
        body = ""
        for part in item.get("content") or ():
            if part.get("type") == "refusal":
                body += plain(f"Refused: {part.get('refusal', '')}", "error")
            else:
                body += markdown(part.get("text", ""))
                body += _citations(part.get("annotations") or ())
        return bubble(str(item.get("role") or "assistant"), body) if body else ""
    if kind == "reasoning":
        texts = "\n\n".join(str(p.get("text", "")) for p in item.get("summary") or ())
        body = markdown(texts) if texts else ""
        if item.get("encrypted_content"):
            body += plain("[reasoning encrypted: content not shown]", "placeholder")
        return folded("Reasoning", body, cls="reasoning") if body else ""
    if kind == "compaction":
        from .compaction import row_html

        return row_html("", "encrypted summary" if item.get("encrypted_content") else "")
    if kind in ("function_call", "custom_tool_call"):
        arguments = item.get("arguments", item.get("input"))
        name = str(item.get("name") or kind)
        return call_card(name, item.get("call_id"), status or "called", arguments=arguments)
    if kind == "mcp_call":
        name = f"{item.get('server_label')}: {item.get('name')}"
        return tool_card(
            name,
            status or ("failed" if item.get("error") else "done"),
            arguments=item.get("arguments"),
            result=item.get("output"),
            error=item.get("error"),
        )
    if kind == "mcp_approval_request":
        action = f"{item.get('server_label')}: {item.get('name')}({item.get('arguments', '')})"
        return line("approval", ("decision", "approval requested"), ("action", action))
    if kind == "mcp_list_tools":
        names = ", ".join(
            str(t.get("name")) for t in item.get("tools") or () if isinstance(t, dict)
        )
        return line(
            "meta", ("decision", "tools"), ("label", f"{item.get('server_label')}: {names}")
        )
    if kind == "code_interpreter_call":
        outputs = item.get("outputs")
        source = code(item.get("code") or "", "python") if item.get("code") else ""
        return tool_card("code_interpreter", status, result=outputs or None, extra=source)
    if kind == "web_search_call":
        searched = item.get("action")
        if not isinstance(searched, Mapping):
            return tool_card("web_search", status, arguments=searched)
        results = searched.get("sources")
        found = _results("sources", results) if results else ""
        query = {k: v for k, v in searched.items() if k != "sources"}  # listed below
        return tool_card("web_search", status, arguments=query, extra=found)
    if kind.endswith("_call"):
        tool = kind.removesuffix("_call")
        rest = _rest(item, "status", "result", "output", "results", "call_id")
        result = item.get("output", item.get("results", item.get("result")))
        return tool_card(tool, status, arguments=rest, result=result)
    return tool_card(kind, status, result=_rest(item, "status") or None)


def responses_response(response: Mapping[str, Any], error: object) -> str:
    """A response's row: status, model, token counts, the error."""
    usage = response.get("usage") or {}
    tokens = ""
    if isinstance(usage, Mapping) and usage.get("output_tokens") is not None:
        tokens = f"{usage.get('input_tokens', 0):,} in · {usage.get('output_tokens', 0):,} out"
    message = error.get("message") or error.get("code") if isinstance(error, Mapping) else error
    status = str(response.get("status") or "")
    return line(
        "meta",
        ("decision", status if status != "completed" else ""),
        ("model", response.get("model")),
        ("tokens", tokens),
        ("error", message),
        status="error" if message else status,
    )


# -- OpenAI Chat Completions ---------------------------------------------------------


def chat_choice(content: object, refusal: object, calls: Iterable[tuple[str, object, str]]) -> str:
    """One choice: its text as a bubble, its refusal, then its tool calls (name, id,
    arguments)."""
    out = ""
    if content:
        out += bubble("assistant", markdown(content))
    if refusal:
        out += bubble("assistant", plain(f"Refused: {refusal}", "error"))
    for name, call_id, arguments in calls:
        out += call_card(name, call_id, "called", arguments=arguments)
    return out


def chat_choice_text(
    content: object, refusal: object, calls: Iterable[tuple[str, object, str]]
) -> str:
    """One choice as text: its text, its refusal, then its tool calls."""
    lines = []
    if content:
        lines.append(long_text(content))
    if refusal:
        lines.append(f"[refusal] {refusal}")
    lines.extend(tool_text(name, call_id, "called", args) for name, call_id, args in calls)
    return "\n\n".join(lines)


class ChatChoice(NamedTuple):
    """One Chat Completions choice as the renderers read it (streamed or whole)."""

    number: object  # its index
    content: object  # text (a StreamedText while streaming) or None
    refusal: object
    calls: Sequence[tuple[str, object, str]]  # (name, call id, arguments)
    finish: object  # finish_reason


_FILTERED: Final = "the provider's content filter stopped the answer"


def _choice_label(choice: ChatChoice) -> str:
    return f"choice {choice.number}" + (f": {choice.finish}" if choice.finish else "")


def chat_text(model: object, choices: Sequence[ChatChoice]) -> str:
    """A completion as text: its heading (the stop reason when it has one choice),
    then each choice (labelled when there are several); a choice its content filter
    stopped says so."""
    many = len(choices) > 1
    out = [heading_text("assistant", model, None if many or not choices else choices[0].finish)]
    for choice in choices:
        if many:
            out.append(f"[{_choice_label(choice)}]")
        body = chat_choice_text(choice.content, choice.refusal, choice.calls)
        if choice.finish == "content_filter" and not body:
            body = f"[{_FILTERED}]"
        if body:
            out.append(body)
    return "\n\n".join(out)


def chat_html(model: object, choices: Sequence[ChatChoice], usage: object = None) -> str:
    """A completion as HTML: its metadata row, then each choice (labelled when there
    are several) as ``chat_choice``; a filtered choice says so."""
    many = len(choices) > 1
    stop = None if many or not choices else choices[0].finish
    out = heading_html("assistant", model, stop, usage if isinstance(usage, Mapping) else None)
    for choice in choices:
        if many:
            out += line("meta", ("decision", _choice_label(choice)))
        body = chat_choice(choice.content, choice.refusal, choice.calls)
        if choice.finish == "content_filter" and not body:
            body = bubble("assistant", plain(_FILTERED, "error"), status="error")
        out += body
    return out


def chat_choices(completion: Mapping[str, Any]) -> list[ChatChoice]:
    """The choices of a whole ``ChatCompletion`` (a non-streamed answer)."""
    out = []
    for position, choice in enumerate(_maps(completion.get("choices"))):
        message = choice.get("message")
        message = message if isinstance(message, Mapping) else {}
        calls = [
            (str(function.get("name")), call.get("id"), str(function.get("arguments", "")))
            for call in _maps(message.get("tool_calls"))
            if isinstance(function := call.get("function") or call.get("custom") or {}, Mapping)
        ]
        index = choice.get("index", position)
        out.append(
            ChatChoice(
                index,
                message.get("content"),
                message.get("refusal"),
                calls,
                choice.get("finish_reason"),
            )
        )
    return out


def _maps(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


# -- Anthropic, a whole message ----------------------------------------------------------


def joined_text(pieces: Iterable[tuple[str, bool]]) -> str:
    """Pieces of an answer, ``(text, on the line before)`` each, as the terminal view
    shows nodes: each without its own trailing line breaks (and, unless it goes on the
    line before, its leading ones), those with nothing to show left out, a blank line
    between them unless one goes on the line before it."""
    out: list[str] = []
    for text, on_line in pieces:
        if on_line and out:
            out.append(text.rstrip("\n"))
        elif text.strip():
            if out:
                out.append("\n\n")
            out.append(text.strip("\n"))
    return "".join(out)


def anthropic_text(message: Mapping[str, Any]) -> str:
    """A whole ``Message``: its heading, then its blocks in order, read as the
    streamed blocks are (a text block on the line of the text before it, or carrying
    its list marker: ``text_follows``)."""
    head = heading_text(message.get("role"), message.get("model"), message.get("stop_reason"))
    usage = compaction_usage(message.get("usage"))
    pieces = [(head, False)]
    for block, marker, on_line in _anthropic_follows(_maps(message.get("content"))):
        pieces.append((anthropic_block_text(block, marker, usage=usage), on_line))
    return joined_text(pieces)


def _anthropic_follows(
    blocks: Iterable[Mapping[str, Any]],
) -> Iterator[tuple[Mapping[str, Any], str, bool]]:
    """Each block of a message with how it follows the block before, as a streamed
    block reads it (``anthropic._after_text``): the list marker it takes and whether
    it goes on that block's line (both only for a text block after a text block)."""
    previous: str | None = None  # the text of the block before, when it is a text block
    for block in blocks:
        marker, on_line = "", False
        if block.get("type") == "text":
            if previous is not None:
                marker, on_line = text_follows(previous)
                # A cited block takes it (as a streamed one: its start declares them).
                marker = marker if block.get("citations") else ""
            previous = str(block.get("text", ""))
        else:
            previous = None
        yield block, marker, on_line


def anthropic_html(message: Mapping[str, Any]) -> str:
    """A whole ``Message``: its metadata row, then its blocks in order; a sentence
    (or a list) citations split into blocks as one text, the citations inline."""
    usage = message.get("usage")
    own = compaction_usage(usage)
    out = [anthropic_message(message, message.get("stop_reason"), usage or {})]
    run: list[tuple[Mapping[str, Any], str]] = []  # text blocks on one line, in order

    def close() -> None:
        if len(run) > 1:
            found = [anthropic_text_piece(block) for block, _ in run]
            out.append(bubble("assistant", cited_markdown(p for p in found if p is not None)))
        elif run:
            out.append(anthropic_block(run[0][0], stopped=True, marker=run[0][1]))
        run.clear()

    for block, marker, on_line in _anthropic_follows(_maps(message.get("content"))):
        if not (run and (on_line or marker)):  # a sentence, or a list, goes on
            close()
        if block.get("type") == "text":
            run.append((block, marker))
        else:
            out.append(anthropic_block(block, stopped=True, usage=own))
    close()
    return "".join(out)


def anthropic_links(message: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, Outcome]]]:
    """A whole ``Message``'s call ids and its server tools' outcomes."""
    blocks = _maps(message.get("content"))
    return (
        [c for block in blocks for c in anthropic_calls(block)],
        [r for block in blocks for r in anthropic_results(block)],
    )


# -- OpenAI Responses, items as text and a whole response --------------------------------


def responses_item_text(item: Mapping[str, Any]) -> str:
    """One output item as text: a message's text (refusals marked), calls as tool
    lines, reasoning summaries, any other item as its JSON."""
    kind = item.get("type")
    if kind == "message":
        lines = []
        for part in _maps(item.get("content")):
            if part.get("type") == "refusal":
                lines.append(f"[refusal] {part.get('refusal', '')}")
            else:
                said = long_text(part.get("text", ""))
                lines.append(said + cited_text(part.get("annotations") or ()))
        return "\n".join(lines)
    if kind in ("function_call", "custom_tool_call"):
        arguments = item.get("arguments", item.get("input"))
        status = str(item.get("status") or "called")
        return tool_text(item.get("name", ""), item.get("call_id"), status, arguments)
    if kind == "reasoning":
        texts = [str(p.get("text", "")) for p in _maps(item.get("summary"))]
        return "[reasoning] " + "\n".join(texts)
    if kind == "compaction":
        from .compaction import row_text

        return row_text("", "encrypted summary" if item.get("encrypted_content") else "")
    rest = {k: v for k, v in item.items() if k not in ("type", "id")}
    return f"[{kind}] {payload(rest)}"


def responses_calls(item: Mapping[str, Any]) -> tuple[str, ...]:
    """The call id of a function (or custom tool) call item."""
    call_id = item.get("call_id")
    if item.get("type") in ("function_call", "custom_tool_call") and isinstance(call_id, str):
        return (call_id,)
    return ()


def responses_heading(response: Mapping[str, Any]) -> str:
    """A response's heading line (its status unless completed, its error)."""
    status = response.get("status")
    head = heading_text(
        "assistant", response.get("model"), None if status == "completed" else status
    )
    error = response.get("error")
    if isinstance(error, Mapping):
        head += f" error: {error.get('message') or error.get('code')}"
    return head


def responses_text(response: Mapping[str, Any]) -> str:
    """A whole ``Response``: its heading, then its output items in order (a
    ``/responses/compact`` answer: its compaction row)."""
    compacted = _compacted(response)
    if compacted is not None:
        from .compaction import row_text

        return row_text(*compacted)
    items = [(responses_item_text(item), False) for item in _maps(response.get("output"))]
    return joined_text([(responses_heading(response), False), *items])


def responses_html(response: Mapping[str, Any]) -> str:
    """A whole ``Response``: its metadata row, then its output items in order (a
    ``/responses/compact`` answer: its compaction row)."""
    compacted = _compacted(response)
    if compacted is not None:
        from .compaction import row_html

        return row_html(*compacted)
    head = responses_response(response, response.get("error"))
    return head + "".join(responses_item(item) for item in _maps(response.get("output")))


def _compacted(response: Mapping[str, Any]) -> tuple[str, str] | None:
    """A ``/responses/compact`` answer (``object: "response.compaction"``: its user
    messages, then one compaction item) as its row's summary and figures (the pass's
    ``usage``, the user messages it kept), or ``None`` for any other response. The
    user messages repeat the request's: the row counts them rather than show them
    again."""
    if response.get("object") != "response.compaction":
        return None
    from .compaction import pass_tokens

    items = _maps(response.get("output"))
    kept = sum(1 for item in items if item.get("role") == "user")
    figures = [pass_tokens(response.get("usage"))]
    figures.append(f"{kept:,} user message{'' if kept == 1 else 's'} kept")
    if any(item.get("type") == "compaction" and item.get("encrypted_content") for item in items):
        figures.append("encrypted summary")
    return "", ", ".join(f for f in figures if f)


# -- Gemini, a whole GenerateContentResponse ---------------------------------------------


def _gemini_call(part: Mapping[str, Any]) -> Mapping[str, Any] | None:
    call = part.get("functionCall")
    return call if isinstance(call, Mapping) else None


def gemini_part_text(part: Mapping[str, Any]) -> str:
    """One part as text: text, a thought, a call as a tool line, another as JSON."""
    if "text" in part:
        said = long_text(part["text"])
        return f"[thought] {said}" if part.get("thought") else said
    call = _gemini_call(part)
    if call is not None:
        return tool_text(call.get("name", ""), call.get("id"), "called", call.get("args"))
    kind = next((k for k in part if k not in ("thoughtSignature", "thought")), "part")
    return f"[{kind}] {payload(part.get(kind))}"


def _candidates(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return sorted(_maps(response.get("candidates")), key=lambda c: c.get("index") or 0)


def _gemini_parts(candidate: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = candidate.get("content")
    return _maps(content.get("parts")) if isinstance(content, Mapping) else []


def gemini_text(response: Mapping[str, Any]) -> str:
    """A response: its heading, then each candidate's parts (labelled when several)
    and how it finished; its error."""
    candidates = _candidates(response)
    many = len(candidates) > 1
    finish = None if many or not candidates else candidates[0].get("finishReason")
    lines = [heading_text("assistant", response.get("modelVersion"), finish)]
    for candidate in candidates:
        if many:
            label = f"candidate {candidate.get('index', 0)}"
            reason = candidate.get("finishReason")
            lines.append(f"[{label}: {reason}]" if reason else f"[{label}]")
        lines.extend(gemini_part_text(part) for part in _gemini_parts(candidate))
    error = response.get("error")
    if error is not None:
        lines.append(f"[error] {payload(error)}")
    return "\n\n".join(lines)


def gemini_html(response: Mapping[str, Any]) -> str:
    """A response: its metadata row, then each candidate's parts as bubbles, folded
    thoughts and tool cards."""
    candidates = _candidates(response)
    many = len(candidates) > 1
    finish = None if many or not candidates else candidates[0].get("finishReason")
    tokens = _tokens(response.get("usageMetadata"), "promptTokenCount", "candidatesTokenCount")
    out = heading_html("assistant", response.get("modelVersion"), finish, tokens)
    for candidate in candidates:
        if many:
            label = f"candidate {candidate.get('index', 0)}: {candidate.get('finishReason')}"
            out += line("meta", ("decision", label))
        for part in _gemini_parts(candidate):
            call = _gemini_call(part)
            if "text" in part and part.get("thought"):
                out += folded("Thinking", markdown(str(part["text"])), cls="reasoning")
            elif "text" in part:
                out += bubble("assistant", markdown(str(part["text"])))
            elif call is not None:
                name = str(call.get("name", ""))
                out += call_card(name, call.get("id"), "called", arguments=call.get("args"))
            else:
                out += tool_card(next(iter(part), "part"), "", result=dict(part))
    error = response.get("error")
    if error is not None:
        out += line("status", ("decision", "error"), ("label", payload(error)), status="failed")
    return out


def gemini_calls(response: Mapping[str, Any]) -> list[str]:
    """The keys of a response's function calls (``call_key``: Gemini gives some no
    id)."""
    return [
        call_key(call.get("id"), call.get("name"))
        for candidate in _candidates(response)
        for part in _gemini_parts(candidate)
        if (call := _gemini_call(part)) is not None
    ]


# -- Bedrock Converse, a whole response -------------------------------------------------


def _converse_blocks(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    output = response.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    return _maps(message.get("content")) if isinstance(message, Mapping) else []


def _converse_tool(block: Mapping[str, Any]) -> Mapping[str, Any] | None:
    tool = block.get("toolUse")
    return tool if isinstance(tool, Mapping) else None


def _converse_result(block: Mapping[str, Any]) -> Mapping[str, Any] | None:
    result = block.get("toolResult")
    return result if isinstance(result, Mapping) else None


def converse_block_text(block: Mapping[str, Any]) -> str:
    """One content block as text: text, reasoning, a call as a tool line, a server
    tool's result left to its call's card."""
    result = _converse_result(block)
    if result is not None and carried(result.get("toolUseId")):
        return ""
    if "text" in block:
        return long_text(block["text"])
    tool = _converse_tool(block)
    if tool is not None:
        return tool_text(tool.get("name", ""), tool.get("toolUseId"), "called", tool.get("input"))
    reasoning = block.get("reasoningContent")
    if isinstance(reasoning, Mapping):
        said = reasoning.get("reasoningText")
        if isinstance(said, Mapping) and said.get("text"):
            return f"[reasoning] {long_text(said['text'])}"
        return "[reasoning redacted]"
    kind = next(iter(block), "block")
    return f"[{kind}] {payload(block.get(kind))}"


def converse_text(response: Mapping[str, Any], model: object = None) -> str:
    """A Converse response: its heading (how it stopped), then its blocks in order."""
    head = heading_text("assistant", model, response.get("stopReason"))
    lines = [head, *(converse_block_text(block) for block in _converse_blocks(response))]
    for exception in _maps(response.get("exceptions")):
        lines.extend(f"[{key}] {payload(body)}" for key, body in exception.items())
    return "\n\n".join(line for line in lines if line)


def converse_html(response: Mapping[str, Any], model: object = None) -> str:
    """A Converse response: its metadata row, then its blocks in order."""
    tokens = _tokens(response.get("usage"), "inputTokens", "outputTokens")
    out = heading_html("assistant", model, response.get("stopReason"), tokens)
    for block in _converse_blocks(response):
        result = _converse_result(block)
        if result is not None and carried(result.get("toolUseId")):
            continue
        tool = _converse_tool(block)
        reasoning = block.get("reasoningContent")
        if "text" in block:
            out += bubble("assistant", markdown(str(block["text"])))
        elif tool is not None:
            name = str(tool.get("name", ""))
            out += call_card(name, tool.get("toolUseId"), "called", arguments=tool.get("input"))
        elif isinstance(reasoning, Mapping):
            out += folded("Reasoning", plain(converse_block_text(block)), cls="reasoning")
        else:
            out += tool_card(next(iter(block), "block"), "", result=dict(block))
    for exception in _maps(response.get("exceptions")):
        for key, body in exception.items():
            out += line("status", ("decision", key), ("label", payload(body)), status="failed")
    return out


def converse_results(response: Mapping[str, Any]) -> list[tuple[str, Outcome]]:
    """A Converse response's server tool results (Nova's code interpreter) as their
    calls' outcomes: the text or JSON each holds."""
    out = []
    for block in _converse_blocks(response):
        result = _converse_result(block)
        if result is None or not isinstance(result.get("toolUseId"), str):
            continue
        said = [
            part.get("text") if "text" in part else payload(part.get("json", part))
            for part in _maps(result.get("content"))
        ]
        status = "failed" if result.get("status") == "error" else "done"
        out.append((result["toolUseId"], Outcome(status, "\n".join(map(str, said)))))
    return out


def converse_calls(response: Mapping[str, Any]) -> list[str]:
    """The ids of a Converse response's tool uses."""
    return [
        tool["toolUseId"]
        for block in _converse_blocks(response)
        if (tool := _converse_tool(block)) is not None and isinstance(tool.get("toolUseId"), str)
    ]
