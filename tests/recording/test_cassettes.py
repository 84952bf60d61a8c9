"""VCR.py and pytest-recording cassettes played back as they are: real cassettes of other
projects (``cassettes/``, see its README for origins and licences) and those of
``../shared``, through the SDKs and a plain HTTP client; a ``null`` and an absent field
match unless strict; hostile and malformed cassettes fail fast with a library error
naming the file and the interaction."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import replay
from definitions._requests_read import api_of_url
from replay import LogError, load_events
from replay.logs import _formats
from replay.recording._player import first_difference, read_calls
from replay.recording._pytest import ConvoRecorder
from tests._shared import SHARED

from ._sdks import require_sdk

pytest_plugins = ["pytester"]

yaml = pytest.importorskip("yaml")
# The recorded model names are old: the SDK warns about them; not our concern here.
pytestmark = pytest.mark.filterwarnings("ignore:The model:DeprecationWarning")

HERE = Path(__file__).parent / "cassettes"
PROMPT = HERE / "llm-anthropic-test_prompt.yaml"  # streamed Anthropic, one call
TOOLS = HERE / "llm-anthropic-test_tools.yaml"  # streamed Anthropic, a tool loop of two
RESPONSES = HERE / "openllmetry-test_responses.yaml"  # gzip bodies as !!binary, two calls
CHAT = HERE / "openllmetry-test_chat_tools_streaming.yaml"  # streamed Chat, [DONE]
SHARED_CASSETTES = sorted(SHARED.glob("fixtures/recorded/*/*.yaml")) if SHARED else []
ALL = [PROMPT, TOOLS, RESPONSES, CHAT, *SHARED_CASSETTES]


def request_body(path: Path, index: int) -> dict[str, Any]:
    """The JSON body the cassette's client sent in interaction ``index``."""
    request = yaml.safe_load(path.read_bytes())["interactions"][index]["request"]
    if request.get("parsed_body") is not None:
        body: dict[str, Any] = request["parsed_body"]
        return body
    decoded: dict[str, Any] = json.loads(request["body"])
    return decoded


def sdk_kwargs(path: Path, index: int) -> dict[str, Any]:
    """The recorded body as SDK arguments (what the installed SDK has no parameter for
    goes in ``extra_body``, as the SDK sends it)."""
    body = request_body(path, index)
    body.pop("stream", None)
    extra = {k: body.pop(k) for k in ("temperature",) if k in body}
    return {**body, "extra_body": extra} if extra else body


def test_a_streamed_anthropic_cassette_plays_back_to_the_sdk() -> None:
    anthropic = require_sdk("anthropic")
    client = replay.playback(anthropic.Anthropic(api_key="unused"), PROMPT)
    with client.messages.stream(**sdk_kwargs(PROMPT, 0)) as stream:
        texts = list(stream.text_stream)
        message = stream.get_final_message()
    assert "".join(texts) == message.content[0].text == "- Captain\n- Scoop"
    assert message.stop_reason == "end_turn"
    player = replay.recording.recorder_of(client)
    assert isinstance(player, replay.recording.Player)
    assert player.unused == ()


def test_a_tool_loop_cassette_plays_back_call_by_call() -> None:
    anthropic = require_sdk("anthropic")
    client = replay.playback(anthropic.Anthropic(api_key="unused"), TOOLS)
    kinds = []
    for index in range(2):
        with client.messages.stream(**sdk_kwargs(TOOLS, index)) as stream:
            kinds.append([block.type for block in stream.get_final_message().content])
    assert kinds == [["tool_use", "tool_use"], ["text"]]


def test_gzip_bodies_stored_as_binary_play_back_to_openai() -> None:
    openai = require_sdk("openai")
    client = replay.playback(openai.OpenAI(api_key="unused"), RESPONSES)
    for index in range(2):
        response = client.responses.create(**sdk_kwargs(RESPONSES, index))
        assert response.output_text == "The capital of France is Paris."


def test_a_streamed_chat_cassette_plays_back_to_openai() -> None:
    openai = require_sdk("openai")
    client = replay.playback(openai.OpenAI(api_key="unused"), CHAT)
    chunks = list(client.chat.completions.create(**sdk_kwargs(CHAT, 0), stream=True))
    arguments = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""
        for c in chunks
        if c.choices[0].delta.tool_calls
    )
    assert json.loads(arguments) == {"location": "San Francisco"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_event_names_are_kept_on_import() -> None:
    events = [e for e in load_events(PROMPT).events if e["type"] == "recording/event"]
    assert events[0]["sse"] == "message_start"
    assert all(e["sse"] == e["event"]["type"] for e in events)
    # [DONE] is kept as the recorder keeps it
    chat = [e for e in load_events(CHAT).events if e["type"] == "recording/event"]
    assert chat[-1] == {"type": "recording/event", "call": 0, "done": True}


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_every_cassette_plays_back_its_recorded_bodies(path: Path) -> None:
    """Through a plain HTTP client: each recorded request gets the recorded body, whose
    bytes read back as the events the cassette holds."""
    calls = read_calls(path)
    assert calls, path
    client = httpx.Client(transport=replay.recording.playback_transport(path))
    interactions = yaml.safe_load(path.read_bytes())["interactions"]
    model_calls = [i for i in interactions if api_of_url(i["request"].get("uri") or "") is not None]
    for call, interaction in zip(calls, model_calls, strict=True):
        body = interaction["request"].get("parsed_body")
        content = json.dumps(body).encode() if body is not None else interaction["request"]["body"]
        response = client.post(call.request["url"], content=content)
        assert response.status_code == call.status
        kind = response.headers["content-type"]
        if "event-stream" in kind:
            again = _formats._sse_records(response.content, call.n)
            assert again == [e for e in load_events(path).events if _event_of(e, call.n)]


def _event_of(event: dict[str, Any], n: int) -> bool:
    return bool(event["type"] == "recording/event" and event["call"] == n)


def test_the_fixture_plays_back_a_pytest_recording_cassette(tmp_path: Path) -> None:
    anthropic = require_sdk("anthropic")
    cassette = tmp_path / "cassettes" / "test_mod" / "test_it.yaml"
    cassette.parent.mkdir(parents=True)
    cassette.write_bytes(PROMPT.read_bytes())
    ours = tmp_path / "recordings" / "test_mod" / "test_it.jsonl"
    recorder = ConvoRecorder(ours, "none", cassette=cassette)
    client = recorder.wrap(anthropic.Anthropic(api_key="unused"))
    with client.messages.stream(**sdk_kwargs(PROMPT, 0)) as stream:
        assert stream.get_final_message().stop_reason == "end_turn"
    assert recorder.unused() is None
    assert not ours.exists()


def test_the_fixture_finds_the_cassette_where_pytest_recording_keeps_it(
    pytester: pytest.Pytester,
) -> None:
    require_sdk("anthropic")
    folder = pytester.path / "cassettes" / "test_agent"
    folder.mkdir(parents=True)
    (folder / "TestAgent.test_prompt.yaml").write_bytes(PROMPT.read_bytes())
    (pytester.path / "elsewhere.yaml").write_bytes(PROMPT.read_bytes())
    kwargs = sdk_kwargs(PROMPT, 0)
    pytester.makepyfile(
        test_agent=f"""
        import anthropic
        import pytest

        pytestmark = pytest.mark.filterwarnings("ignore:The model:DeprecationWarning")

        def ask(convo_recorder):
            client = convo_recorder.wrap(anthropic.Anthropic(api_key="k", max_retries=0))
            with client.messages.stream(**{kwargs!r}) as stream:
                return stream.get_final_message().content[0].text

        class TestAgent:
            def test_prompt(self, convo_recorder):
                assert ask(convo_recorder) == "- Captain\\n- Scoop"

        @pytest.mark.convo_recording(cassette="elsewhere.yaml")
        def test_named(convo_recorder):
            assert ask(convo_recorder) == "- Captain\\n- Scoop"
        """
    )
    args = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    pytester.runpytest_inprocess(*args).assert_outcomes(passed=2)
    assert not (pytester.path / "recordings").exists()  # the cassettes were played back


# -- null and absent ------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
    ),
    max_leaves=10,
)


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@pytest.mark.slow
@given(json_values, json_values)
def test_null_and_absent_members_match_unless_strict(recorded: Any, sent: Any) -> None:
    same = canonical(without_nulls(recorded)) == canonical(without_nulls(sent))
    assert (first_difference(recorded, sent, strict=False) is None) == same
    assert (first_difference(recorded, sent) is None) == (canonical(recorded) == canonical(sent))


def test_playback_matches_a_null_with_an_absent_field_unless_strict(tmp_path: Path) -> None:
    document = yaml.safe_load(RESPONSES.read_bytes())
    request = document["interactions"][0]["request"]
    request["body"] = json.dumps({**json.loads(request["body"]), "instructions": None})
    path = tmp_path / "nulls.yaml"
    path.write_text(yaml.safe_dump(document))
    body = json.loads(yaml.safe_load(RESPONSES.read_bytes())["interactions"][0]["request"]["body"])
    client = httpx.Client(transport=replay.recording.playback_transport(path))
    assert client.post("https://api.openai.com/v1/responses", json=body).status_code == 200
    strict = httpx.Client(transport=replay.recording.playback_transport(path, strict=True))
    with pytest.raises(replay.PlaybackMismatchError, match=r"instructions: None != <absent>"):
        strict.post("https://api.openai.com/v1/responses", json=body)


# -- hostile and malformed cassettes --------------------------------------------------


def alias_bomb() -> bytes:
    """The classic "billion laughs", 9 levels of 9 aliases: under a kilobyte."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        refs = ",".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return ("interactions:\n- request: {uri: x}\n" + "\n".join(lines) + "\n").encode()


def test_an_alias_bomb_is_refused_at_the_aliased_node() -> None:
    bomb = alias_bomb()
    assert len(bomb) < 1000
    with pytest.raises(LogError, match=r"<bytes>:3: not a YAML cassette: a YAML alias") as caught:
        _formats.parse_events(bomb, path=None)
    assert caught.value.line == 3  # the aliased node


def test_a_gzip_bomb_is_refused_past_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_formats, "_INFLATED_MAX", 1 << 20)
    bomb = gzip.compress(b"\0" * (2 << 20))
    document = cassette(response={"status": {"code": 200}, "body": {"string": bomb}})
    with pytest.raises(LogError, match=r"c\.yaml: interaction 0: response\.body inflates to"):
        _formats.parse_events(yaml.safe_dump(document).encode(), path="c.yaml")
    fits = cassette(response={"status": {"code": 200}, "body": {"string": gzip.compress(b"{}")}})
    assert _formats.parse_events(yaml.safe_dump(fits).encode(), path="c.yaml").events


@pytest.mark.parametrize("form", ["json", "yaml"])
def test_a_cassette_nested_too_deep_is_refused(form: str) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    uri = b"https://api.openai.com/v1/responses"
    data = (
        b'{"interactions":[{"request":{"uri":"' + uri + b'","parsed_body":' + deep + b"}}]}"
        if form == "json"
        else b"interactions:\n- request:\n    uri: " + uri + b"\n    parsed_body: " + deep + b"\n"
    )
    with pytest.raises(LogError, match=r"(?s)^d[:,].*(nested deeper|nesting depth)"):
        _formats.parse_events(data, path="d")


def cassette(**interaction: Any) -> dict[str, Any]:
    request = {"method": "POST", "uri": "https://api.openai.com/v1/responses", "body": "{}"}
    return {"interactions": [{"request": request, **interaction}], "version": 1}


@pytest.mark.parametrize(
    ("interaction", "message"),
    [
        ({"request": [1, 2]}, r"interaction\.request is list \[1, 2\], not a mapping"),
        (
            {"response": {"status": {"code": "200"}}},
            r"response\.status\.code is str '200', not an integer",
        ),
        ({"response": {"headers": [1, 2]}}, r"response\.headers is list"),
        ({"response": {"body": 42}}, r"response\.body is int"),
        ({"request": {"uri": 7}}, r"request\.uri is int"),
        ("not an interaction", r"is str, not a mapping"),
    ],
)
def test_a_malformed_interaction_is_named(interaction: Any, message: str, tmp_path: Path) -> None:
    document = cassette(response={"status": {"code": 200}})
    if isinstance(interaction, dict):
        document["interactions"][0].update(interaction)
    else:
        document["interactions"].append(interaction)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(document))
    where = 1 if isinstance(interaction, str) else 0
    with pytest.raises(LogError, match=rf"c\.json: interaction {where}: {message}"):
        load_events(path)
    with pytest.raises(replay.RecordingError, match=rf"interaction {where}: {message}"):
        read_calls(path)


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ({"status": None}, r"its status is None, not an HTTP status"),
        ({"status": "200"}, r"its status is '200'"),
        ({"headers": [1, 2]}, r"its headers are \[1, 2\]"),
    ],
)
def test_a_malformed_recording_is_named(
    response: dict[str, Any], message: str, tmp_path: Path
) -> None:
    path = tmp_path / "calls.jsonl"
    replay.write_log(
        path,
        [
            {"type": "recording/request", "call": 0, "api": "openai.responses", "url": "/v1"},
            {"type": "recording/response", "call": 0, "status": 200, "headers": {}, **response},
        ],
    )
    with pytest.raises(replay.RecordingError, match=rf"position 1: {message}"):
        read_calls(path)


@pytest.mark.slow
def test_many_interactions_are_numbered_in_order() -> None:
    document = yaml.safe_load(RESPONSES.read_bytes())
    for interaction in document["interactions"]:  # bytes as JSON: base64, as VCR.py's JSON does
        body = interaction["response"]["body"]
        body["base64_string"] = base64.b64encode(body.pop("string")).decode()
    document["interactions"] *= 1500
    events = _formats.parse_events(json.dumps(document).encode(), path=None).events
    numbers = [e["call"] for e in events if e["type"] == "recording/request"]
    assert numbers == list(range(3000))
