"""What of a request or response may be written down: the one rule for URLs, headers and
error texts, shared by the recorder and every importer (a cassette is read through it).

Theory of operation
-------------------
Everything is an allow-list: a header is kept only when its name is listed, a query
parameter only when its name (percent-decoded, case folded) is listed, and a URL's
userinfo and fragment never. A new secret-bearing header or parameter is dropped by
default; a harmless one missing from a list costs a line in a recording, never a key.

An error text (what an HTTP library raised) may quote a header value: httpx refuses an
API key read from a file with its trailing newline and puts the value in the message.
``scrub`` takes the values the rule withheld (``withheld``) out of such a text, in
every form a message may quote them (as they are, stripped, word by word, and
backslash-escaped as ``repr`` writes them).

May import: nothing of ``replay`` (``replay.logs`` is the lowest room).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["REDACTED", "kept_headers", "kept_url", "scrub", "withheld"]

# Headers worth keeping (content negotiation, versions, request ids, retry hints).
REQUEST_HEADERS: Final = frozenset(
    {
        "accept",
        "content-type",
        "user-agent",
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        "x-stainless-lang",
        "x-stainless-package-version",
        "x-stainless-runtime",
        "x-stainless-runtime-version",
        "x-stainless-retry-count",
        "x-stainless-helper-method",
        "x-stainless-stream-helper",
        "x-goog-api-client",
        "amz-sdk-request",
    }
)
RESPONSE_HEADERS: Final = frozenset(
    {
        "content-type",
        "request-id",
        "x-request-id",
        "x-amzn-requestid",
        "x-amzn-errortype",
        "openai-processing-ms",
        "openai-version",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "server-timing",
    }
)
RESPONSE_PREFIXES: Final = ("anthropic-ratelimit-", "x-ratelimit-", "x-amzn-bedrock-")

# Query parameters the model APIs take that carry no credential: Gemini's ``alt=sse``,
# Azure OpenAI's ``api-version``, Anthropic's ``beta``, list paging and selections.
QUERY_PARAMETERS: Final = frozenset(
    {
        "alt",
        "api-version",
        "beta",
        "stream",
        "limit",
        "after",
        "before",
        "order",
        "include",
        "include[]",
        "fields",
        "prettyprint",
        "model",
        "view",
    }
)

REDACTED: Final = "[redacted]"
# A withheld value shorter than this is not searched for in error texts: replacing
# every "1", "gzip" or "Bearer" would garble the message, and a value that short is no
# credential.
_SHORTEST: Final = 8


def _text(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value)
    return str(value)


def _pairs(headers: object) -> list[tuple[str, str]]:
    """Header pairs from a mapping or an iterable of pairs (values may be lists, as a
    cassette keeps them); anything else has no headers."""
    if isinstance(headers, Mapping):
        items: Iterable[object] = headers.items()
    elif isinstance(headers, list | tuple) or (
        isinstance(headers, Iterable) and not isinstance(headers, str | bytes)
    ):
        items = headers
    else:
        return []
    pairs: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, tuple | list) and len(item) == 2:
            pairs.append((_text(item[0]), _text(item[1])))
    return pairs


def _kept_header(name: str, *, response: bool) -> bool:
    if response:
        return name in RESPONSE_HEADERS or name.startswith(RESPONSE_PREFIXES)
    return name in REQUEST_HEADERS


def kept_headers(headers: object, *, response: bool) -> dict[str, str]:
    """The allow-listed headers of a request or response, names lower-cased.

    ``headers`` is a mapping or pairs; a list value (a cassette's) is joined with
    ``", "``; anything else (a hostile cassette's number) has no headers."""
    return {
        name.lower(): value
        for name, value in _pairs(headers)
        if _kept_header(name.lower(), response=response)
    }


def _kept_parameter(name: str) -> bool:
    # ``name`` as parse_qsl gives it: percent-decoded once (``k%65y`` is ``key``).
    return name.strip().lower() in QUERY_PARAMETERS


def kept_url(url: str) -> str:
    """``url`` with only its allow-listed query parameters: no userinfo, no fragment,
    no parameter that is not known to be harmless (``key``, ``code``, ``sig``,
    ``k%65y``, ...). An unparseable URL (a hostile cassette's) gives ``""``."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        query = [
            (name, value)
            for name, value in parse_qsl(parts.query, keep_blank_values=True)
            if _kept_parameter(name)
        ]
        return urlunsplit((parts.scheme, host, parts.path, urlencode(query), ""))
    except ValueError:
        return ""


def withheld(url: str, headers: object) -> list[str]:
    """The values ``kept_url`` and ``kept_headers`` leave out of a request: what an
    error text about it must not quote (see ``scrub``). A value the kept URL shows
    anyway (the ``host`` header) is not withheld."""
    values = [
        value for name, value in _pairs(headers) if not _kept_header(name.lower(), response=False)
    ]
    try:
        parts = urlsplit(url)
        userinfo = parts.netloc.rpartition("@")[0]
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return [*values, url]
    if userinfo:
        values += [userinfo, *userinfo.split(":", 1)]
    values += [value for name, value in query if not _kept_parameter(name)]
    if parts.fragment:
        values.append(parts.fragment)
    public = kept_url(url)
    return [value for value in values if value.strip() not in public]


def _forms(value: str) -> set[str]:
    """Every form an error text may quote ``value`` in."""
    forms = {value, value.strip(), *value.split()}
    for form in list(forms):
        forms.add(repr(form)[1:-1])
        forms.add(repr(form.encode("utf-8", "replace"))[2:-1])
    return {form for form in forms if len(form) >= _SHORTEST}


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every form of every value of ``secrets`` replaced by ``REDACTED``
    (values shorter than eight characters are left: they are no secret and too common)."""
    forms: set[str] = set()
    for secret in secrets:
        forms |= _forms(secret)
    for form in sorted(forms, key=len, reverse=True):  # a longer form first: it holds the others
        text = text.replace(form, REDACTED)
    return text
