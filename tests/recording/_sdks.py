"""The official clients of the test extra, built against a base URL, and one model call
each (streamed or not, sync or async) whose result is plain JSON-like data to compare.

A case is ``(provider, stream, asynchronous)``; ``call(case, base)`` builds a fresh client
(``wrap`` instruments it first: ``record``/``playback``) and returns what the SDK gave.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .._shared import require
from . import _server

ARGS = {"model": "claude-test", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
BEDROCK = {"modelId": "test-model", "messages": [{"role": "user", "content": [{"text": "hi"}]}]}

ANSWERS: dict[tuple[str, bool], Callable[[], _server.Answer]] = {
    ("anthropic", True): _server.anthropic_stream,
    ("anthropic", False): _server.anthropic_message,
    ("openai_chat", True): _server.openai_chat_stream,
    ("openai_chat", False): _server.openai_chat_completion,
    ("openai_responses", True): _server.openai_responses_stream,
    ("openai_responses", False): _server.openai_response,
    ("gemini", True): _server.gemini_stream,
    ("gemini", False): _server.gemini_response,
    ("bedrock", True): _server.bedrock_stream,
    ("bedrock", False): _server.bedrock_response,
}
API = {
    "anthropic": "anthropic.messages",
    "openai_chat": "openai.chat",
    "openai_responses": "openai.responses",
    "gemini": "gemini.generate_content",
    "bedrock": "bedrock.converse",
}
CASES = [
    (provider, stream, asynchronous)
    for (provider, stream) in ANSWERS
    for asynchronous in ((False,) if provider == "bedrock" else (False, True))
]

Wrap = Callable[[Any], Any]


# What the SDKs return about the HTTP exchange itself (every header, the date): playback
# gives the recorded, allow-listed headers, so the comparison leaves them out.
TRANSPORT_FIELDS = ("ResponseMetadata", "sdk_http_response")


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return _dump(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items() if k not in TRANSPORT_FIELDS}
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value


def client(provider: str, base: str, asynchronous: bool, *, timeout: float = 10.0) -> Any:
    """A fresh official client of ``provider`` sending to ``base``, no retries."""
    if provider == "anthropic":
        sdk = require_sdk("anthropic")
        cls = sdk.AsyncAnthropic if asynchronous else sdk.Anthropic
        http = sdk.DefaultAsyncHttpxClient if asynchronous else sdk.DefaultHttpxClient
        return cls(
            api_key="sk-ant-SECRET-KEY-0000",
            base_url=base,
            max_retries=0,
            timeout=timeout,
            http_client=http(trust_env=False),
        )
    if provider.startswith("openai"):
        sdk = require_sdk("openai")
        cls = sdk.AsyncOpenAI if asynchronous else sdk.OpenAI
        http = sdk.DefaultAsyncHttpxClient if asynchronous else sdk.DefaultHttpxClient
        return cls(
            api_key="sk-SECRET-KEY-0000",
            base_url=f"{base}/v1",
            max_retries=0,
            timeout=timeout,
            http_client=http(trust_env=False),
        )
    if provider == "gemini":
        genai = require_sdk("google.genai")
        from google.genai import types

        return genai.Client(
            api_key="AIza-SECRET-KEY-0000",
            http_options=types.HttpOptions(base_url=base, timeout=int(timeout * 1000)),
        )
    boto3 = require_sdk("boto3")
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=base,
        aws_access_key_id="AKIASECRETKEYID0000",
        aws_secret_access_key="aws-SECRET-ACCESS-KEY-0000",
        aws_session_token="aws-SESSION-TOKEN-0000",
        config=Config(
            retries={"total_max_attempts": 1}, read_timeout=timeout, connect_timeout=timeout
        ),
    )


SECRETS = (
    b"SECRET",
    b"sk-ant-",
    b"AIza",
    b"AKIA",
    b"Signature=",
    b"Credential=",
    b"x-amz-security-token",
)


def require_sdk(name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        require(name, f"pip install -e '.[test]' installs {name}", found=False)
        raise


def call(case: tuple[str, bool, bool], base: str, wrap: Wrap = lambda c: c, **kw: Any) -> Any:
    """One model call of ``case`` through a fresh client wrapped by ``wrap``: what the
    SDK returned, as plain data."""
    provider, stream, asynchronous = case
    made = wrap(client(provider, base, asynchronous, **kw))
    if asynchronous:
        return asyncio.run(_async_call(provider, stream, made))
    return _sync_call(provider, stream, made)


def _sync_call(provider: str, stream: bool, c: Any) -> Any:
    if provider == "anthropic":
        if stream:
            with c.messages.stream(**ARGS) as events:
                seen = [_dump(e) for e in events]
                return seen, _dump(events.get_final_message())
        return _dump(c.messages.create(**ARGS))
    if provider == "openai_chat":
        if stream:
            return [_dump(chunk) for chunk in c.chat.completions.create(**CHAT, stream=True)]
        return _dump(c.chat.completions.create(**CHAT))
    if provider == "openai_responses":
        if stream:
            return [_dump(e) for e in c.responses.create(model="gpt-test", input="hi", stream=True)]
        return _dump(c.responses.create(model="gpt-test", input="hi"))
    if provider == "gemini":
        if stream:
            chunks = c.models.generate_content_stream(model="gemini-test", contents="hi")
            return [_dump(chunk) for chunk in chunks]
        return _dump(c.models.generate_content(model="gemini-test", contents="hi"))
    if stream:
        return [_dump(e) for e in c.converse_stream(**BEDROCK)["stream"]]
    return _dump(c.converse(**BEDROCK))


async def _async_call(provider: str, stream: bool, c: Any) -> Any:
    if provider == "anthropic":
        if stream:
            async with c.messages.stream(**ARGS) as events:
                seen = [_dump(e) async for e in events]
                return seen, _dump(await events.get_final_message())
        return _dump(await c.messages.create(**ARGS))
    if provider == "openai_chat":
        if stream:
            created = await c.chat.completions.create(**CHAT, stream=True)
            return [_dump(chunk) async for chunk in created]
        return _dump(await c.chat.completions.create(**CHAT))
    if provider == "openai_responses":
        if stream:
            created = await c.responses.create(model="gpt-test", input="hi", stream=True)
            return [_dump(e) async for e in created]
        return _dump(await c.responses.create(model="gpt-test", input="hi"))
    if stream:
        chunks = await c.aio.models.generate_content_stream(model="gemini-test", contents="hi")
        return [_dump(chunk) async for chunk in chunks]
    return _dump(await c.aio.models.generate_content(model="gemini-test", contents="hi"))
