"""1,000 malformed or hostile requests against a real proxy subprocess over a fake engine.

Hypothesis draws them reproducibly (derandomized, no example database: the same 1,000
requests on every run, and no ``.hypothesis`` folder written). The engine in front of
which the proxy runs (benchmarks/proxy/fast_upstream.py) never fails, so any 5xx is the
proxy's own. Every 4xx must be JSON with a message, the proxy must stay healthy, and at the
end every session file must read back intact with nothing written outside ``--out``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.proxy.fast_upstream import build_app
from tests.reliability._faults import RawResponse, Sandbox, file_modes, read_out_dir, sandboxed_proxy

# docs/proxy.md#sessions, written out here rather than imported: the test judges the proxy's rule.
SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
FUZZ = settings(
    derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)  # fmt: skip
BASES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {
        "model": "m", "max_tokens": 8, "stream": False,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    },
    "/v1/messages": {
        "model": "claude", "max_tokens": 8, "stream": False, "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
    },
    "/v1/responses": {
        "model": "codex", "instructions": "Be brief.", "stream": False,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
    },
}  # fmt: skip
STREAM_ENDS = {
    "/v1/chat/completions": b"data: [DONE]\n\n",
    "/v1/messages": b"event: message_stop",
    "/v1/responses": b"event: response.completed",
}
JSON = [(b"Content-Type", b"application/json")]
SHORT_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
ODD_TEXT = SHORT_TEXT | st.sampled_from(
    ["\u202e", "\ufeff", "\x00", "\ud800", "🤖" * 50, "a\u0301" * 20, "\uffff", "x" * 70_000]
)
HOSTILE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.floats() | ODD_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ODD_TEXT, inner, max_size=3),
    max_leaves=8,
) | st.integers(1, 400).map(lambda depth: json.loads("[" * depth + "]" * depth))  # past orjson's 254
IDS = SHORT_TEXT | st.sampled_from(["../../etc/passwd", "..", ".hidden", "a/b", "a\\b", "\x00", "x" * 129, "ok-id", "é"])


@pytest.fixture(scope="module", autouse=True)
def _same_inputs_whatever_ran_before() -> Iterator[None]:
    """Hypothesis mixes constants read from the source of every local module imported so far
    into what it draws (hypothesis.internal.conjecture.providers), so a derandomized test
    would draw other requests alone than after other test files. Without them the 1,000
    requests depend on this file only. Internal API: if it moves, setattr fails loudly."""
    from hypothesis.internal.conjecture import providers

    patch = pytest.MonkeyPatch()
    patch.setattr(providers, "_get_local_constants", providers.Constants)
    providers.CONSTANTS_CACHE.cache.clear()  # values chosen with the constants seen so far
    yield
    patch.undo()
    providers.CONSTANTS_CACHE.cache.clear()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with sandboxed_proxy(tmp_path_factory.mktemp("fuzz"), build_app(16, 4)) as box:
        yield box


def _check(box: Sandbox, method: bytes, path: str, resp: RawResponse) -> None:
    """What every answer must be, whatever was asked."""
    assert resp.status < 500, f"{method!r} {path}: the proxy answered {resp.status}: {resp.body[:300]!r}"
    if 400 <= resp.status and method != b"HEAD":  # a HEAD answer has no body, by HTTP's rule
        assert resp.headers.get("content-type", "").startswith("application/json"), resp
        error = orjson.loads(resp.body)
        message = error["error"]["message"]  # OpenAI's shape and Anthropic's both nest it under "error"
        assert isinstance(message, str) and message.strip(), resp.body
    health = box.request(b"GET", b"/health", [], b"")
    assert box.proxy.process.poll() is None and health.status == 200 and orjson.loads(health.body)["ok"] is True


@st.composite
def mutated_bodies(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid request of one surface with one part replaced, removed or added, then perhaps broken as bytes."""
    path = draw(st.sampled_from(sorted(BASES)))
    body = json.loads(json.dumps(BASES[path]))
    body["stream"] = draw(st.booleans())
    spots = list(_spots(body))
    parent, key = draw(st.sampled_from(spots))
    action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
    if action == "replace":
        parent[key] = draw(HOSTILE)
    elif action == "delete":
        del parent[key]
    elif isinstance(parent, dict):
        parent[draw(ODD_TEXT)] = draw(HOSTILE)
    else:
        parent.append(draw(HOSTILE))
    raw = json.dumps(body, allow_nan=True, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    breakage = draw(st.sampled_from(["none"] * 6 + ["truncate", "invalid-utf8", "trailing"]))
    if breakage == "truncate":
        raw = raw[: draw(st.integers(0, len(raw)))]
    elif breakage == "invalid-utf8":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])) + raw[at:]
    elif breakage == "trailing":
        raw += draw(st.sampled_from([b"}", b" garbage", b"\x00", b"{}"]))
    return path, raw


def _spots(node: Any) -> Iterator[tuple[Any, Any]]:
    """Every (container, key) in a JSON document: the places a mutation can hit."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in list(items):
        yield node, key
        if isinstance(value, (dict, list)) and value:
            yield from _spots(value)


RAW_BODIES = st.binary(max_size=200) | st.sampled_from([
    b"", b"null", b"[]", b"42", b'"x"', b"NaN", b"{", b"\xef\xbb\xbf{}", b'{"messages": ' + b"[" * 5000 + b"]" * 5000 + b"}",
])
CONTENT_TYPES = st.sampled_from([b"application/json", b"text/plain", b"application/x-www-form-urlencoded",
                                 b"multipart/form-data; boundary=x", b"application/json; charset=latin-1", b"\xff/\xfe"])


@settings(FUZZ, max_examples=600)
@given(request=mutated_bodies() | st.tuples(st.sampled_from(sorted(BASES)), RAW_BODIES), content_type=CONTENT_TYPES,
       in_session=st.booleans())
def test_fuzzed_bodies_get_json_errors_and_never_a_5xx(sandbox, request, content_type, in_session) -> None:
    path, body = request
    target = ("/s/fuzz-bodies" if in_session else "") + path
    resp = sandbox.request(b"POST", target.encode(), [(b"Content-Type", content_type)], body)
    _check(sandbox, b"POST", target, resp)
    if resp.status == 200 and resp.headers.get("content-type", "").startswith("text/event-stream"):
        assert STREAM_ENDS[path] in resp.body, f"a stream the engine finished ended in error: {resp.body[-300:]!r}"
    elif resp.status == 200:
        assert isinstance(orjson.loads(resp.body), dict)


SEGMENT = st.text(st.characters(codec="utf-8"), max_size=12).map(lambda s: quote(s, safe=""))
METHODS = st.sampled_from([b"GET", b"POST", b"PUT", b"DELETE", b"PATCH", b"OPTIONS", b"HEAD"])
HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=150)
SESSION_HEADERS = [b"session-id", b"X-Claude-Code-Session-Id", b"traceparent"]


@settings(FUZZ, max_examples=300)
@given(
    method=METHODS,
    route=st.one_of(
        IDS.map(lambda sid: ("path-id", sid, f"/s/{quote(sid, safe='')}/v1/chat/completions")),
        IDS.map(lambda sid: ("flush", sid, f"/flush?session={quote(sid, safe='')}")),
        st.lists(SEGMENT, max_size=5).map(lambda segs: ("random", None, "/" + "/".join(segs))),
        st.sampled_from(sorted(BASES) + ["/v1/models", "/health", "/flush"]).map(lambda p: ("known", None, p)),
    ),
    headers=st.lists(st.tuples(st.sampled_from(SESSION_HEADERS), HEADER_TEXT | st.sampled_from(
        ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-" + "0" * 32 + "-00f067aa0ba902b7-01",
         "ff-zz-zz-zz", "../../etc/passwd"])), max_size=3),
)
def test_fuzzed_routes_methods_and_session_ids_are_refused_cleanly(sandbox, method, route, headers) -> None:
    kind, session_id, target = route
    body = orjson.dumps(BASES["/v1/chat/completions"]) if method == b"POST" else b""
    hdrs = JSON + [(name, value.strip().encode("latin-1")) for name, value in headers]
    resp = sandbox.request(method, target.encode(), hdrs, body)
    _check(sandbox, method, target, resp)
    if kind == "path-id" and resp.status == 200:  # a safe id names its file as it is
        assert (sandbox.out / f"{session_id}.jsonl").is_file()
    if kind in ("path-id", "flush") and method == b"POST" and not SAFE_ID.fullmatch(session_id):
        assert resp.status in (400, 404), f"unsafe session id {session_id!r} accepted: {resp.status}"
        if resp.status == 400:
            assert b"letters, digits" in resp.body  # the refusal names the rule


# Nesting deeper than orjson.dumps's 255 levels (orjson.loads takes 1024): the proxy answers 500.
# In "metadata", a field every surface accepts unread, so that each surface's own checks pass.
DEEP_SPOT = b'"@deep@"'


@pytest.mark.parametrize("path", sorted(BASES))
def test_json_nested_past_what_orjson_can_write_is_refused_with_400(sandbox, path) -> None:
    deep = orjson.dumps({**BASES[path], "metadata": "@deep@"}).replace(DEEP_SPOT, b"[" * 300 + b"]" * 300)
    resp = sandbox.request(b"POST", path.encode(), JSON, deep)
    assert resp.status == 400, resp.body[:200]


@pytest.mark.parametrize("role", [[], {}])
def test_a_responses_message_role_of_the_wrong_type_is_refused_with_400(sandbox, role) -> None:
    body = {**BASES["/v1/responses"], "input": [{"type": "message", "role": role, "content": "hi"}]}
    resp = sandbox.request(b"POST", b"/v1/responses", JSON, orjson.dumps(body))
    assert resp.status == 400, resp.body[:200]


# Bytes an HTTP client library would never send: aiohttp's parser refuses them before the app runs.
ONE_LINE = st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))
MALFORMED = st.one_of(
    st.tuples(st.sampled_from([b"FOO", b"G\x00T", b"POST\xff", b"", b"get"]), st.just(b"/v1/chat/completions"),
              st.just([])),  # fmt: skip
    st.tuples(st.just(b"POST"), ONE_LINE.map(lambda b: b"/s/" + b + b" /v1/chat/completions"), st.just([])),
    st.tuples(st.just(b"POST"), st.just(b"/v1/chat/completions"), ONE_LINE.map(lambda b: [(b"session-id", b"\x00" + b)])),
)


@settings(FUZZ, max_examples=100)
@given(request=MALFORMED)
def test_malformed_http_is_refused_without_harm(sandbox, request) -> None:
    method, target, headers = request
    resp = sandbox.request(method, target, JSON + headers, b"{}")
    assert resp.status < 500
    assert sandbox.proxy.process.poll() is None and sandbox.request(b"GET", b"/health", [], b"").status == 200


def test_malformed_http_is_a_plain_400_naming_the_fault(sandbox) -> None:
    # Not HTTP the application could read: aiohttp's parser answers before any route runs,
    # in plain text (docs/proxy.md#errors), and closes the connection.
    resp = sandbox.request(b"POST", b"/s/\xff/v1/chat/completions", JSON, b"{}")
    assert resp.status == 400 and resp.headers.get("content-type", "").startswith("text/plain")
    assert b"Invalid char in url path" in resp.body  # the fault, named


def test_after_the_fuzzing_every_file_is_intact_and_inside_out(sandbox: Sandbox) -> None:
    strays = sandbox.created_outside_out()
    assert not strays, f"the proxy created paths outside its output directory: {strays[:10]}"
    files = sorted(sandbox.out.iterdir())
    assert files and all(path.is_file() and not path.is_symlink() and SAFE_ID.fullmatch(path.stem) for path in files)
    assert set(file_modes(sandbox.out).values()) == {0o600}
    sessions = read_out_dir(sandbox.out)  # every record valid, call_index contiguous
    assert sum(len(calls) for calls in sessions.values()) > 0
