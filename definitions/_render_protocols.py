"""HTML for the protocols' own objects: an Anthropic content block, a Responses output
item, a Chat Completions choice, an AI SDK part, an AG-UI message.

The protocol definition sets render the final objects their ``fold()`` returns, so
each shape is drawn once, here, with the blocks of ``_render``: text as a Markdown
bubble, calls as tool cards, reasoning folded, results and citations as links.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._render import (
    bubble,
    cite_link,
    code,
    folded,
    line,
    list_item_text,
    markdown,
    payload,
    plain,
    sources,
    tool_card,
)


def _citations(citations: Iterable[Any]) -> str:
    """Citations as small links after the text, one per source, the quote on hover."""
    seen: dict[object, str] = {}
    for cite in citations:
        if not isinstance(cite, Mapping):
            continue
        url = cite.get("url") or cite.get("document_title") or cite.get("title")
        if url in seen:
            continue
        title = cite.get("title") or cite.get("document_title") or cite.get("url") or "source"
        seen[url] = cite_link(cite.get("url"), title, str(cite.get("cited_text") or ""))
    return f'<div class="citations">{"".join(seen.values())}</div>' if seen else ""


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
    block: Mapping[str, Any], *, stopped: bool, streamed: object = None, marker: str = ""
) -> str:
    """One content block of a message, as rebuilt by the fold; ``streamed`` is its
    text as streamed (a ``StreamedText``, rendered incrementally) when it has one;
    ``marker`` the list marker it carries (``BlockState.marker``)."""
    kind = str(block.get("type"))
    if kind == "text":
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
        from .anthropic import _compaction_row
        from .compaction import row_html

        return row_html(*_compaction_row(dict(block)))
    if "input" in block or kind.endswith("tool_use"):
        status = "called" if stopped else "streaming"
        server = block.get("server_name")
        name = f"{server}: {block.get('name')}" if server else str(block.get("name") or kind)
        return tool_card(name, status, arguments=block.get("input"))
    content = block.get("content")
    if kind.endswith("_tool_result"):
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


def anthropic_message(message: Mapping[str, Any], stop: object, usage: Mapping[str, Any]) -> str:
    """A message's metadata row: model, stop reason and token counts."""
    tokens = ""
    if usage.get("output_tokens") is not None:
        tokens = f"{usage.get('input_tokens', 0):,} in · {usage.get('output_tokens', 0):,} out"
    return line(
        "meta",
        ("decision", stop if stop not in ("end_turn", None) else ""),
        ("model", message.get("model")),
        ("tokens", tokens),
        status="error" if stop in ("refusal", "max_tokens") else "",
    )


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
        return tool_card(str(item.get("name") or kind), status or "called", arguments=arguments)
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


def chat_choice(content: object, refusal: object, calls: Iterable[tuple[str, str]]) -> str:
    """One choice: its text as a bubble, its refusal, then its tool calls."""
    out = ""
    if content:
        out += bubble("assistant", markdown(content))
    if refusal:
        out += bubble("assistant", plain(f"Refused: {refusal}", "error"))
    for name, arguments in calls:
        out += tool_card(name, "called", arguments=arguments)
    return out
