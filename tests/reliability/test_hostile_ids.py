"""Session ids and bodies chosen to break out: traversal, NUL, over-long, hidden names, huge bodies.

An id names a file, so a bad one in the URL path is refused (400 naming the rule) and a bad
one in a header is hashed to ``h-<sha256 prefix>`` (docs/proxy.md#sessions); either way no
file appears outside ``--out``, and every file written is the owner's alone (0600).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import orjson
import pytest

from benchmarks.proxy.fast_upstream import build_app
from components.proxy import ProxyConfig, start_proxy
from tests.reliability._faults import (
    REPO,
    BackgroundServer,
    LoopThread,
    Sandbox,
    file_modes,
    raw_request,
    read_out_dir,
    sandboxed_proxy,
)

CHAT = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
MESSAGES = orjson.dumps({"model": "c", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]})
JSON = [(b"Content-Type", b"application/json")]
RULE = b"letters, digits, '.', '_' and '-', at most 128 characters, not starting with '.'"
# Path segments as a client would send them: anything but the id's own alphabet percent-encoded.
REFUSED_IN_PATH = {
    "traversal": b"..%2F..%2Fetc%2Fpasswd",
    "double-encoded traversal": b"%252e%252e%252fetc",
    "encoded dot-dot": b"%2e%2e",
    "NUL": b"run%00.jsonl",
    "over-long": b"x" * 129,
    "leading dot": b".hidden",
    "backslash": b"a%5Cb",
    "non-ASCII letter": b"%C3%A9t%C3%A9",
}
HOSTILE_HEADER_VALUES = ["../../etc/passwd", "..", ".bashrc", "a/b", "x" * 129, "run id", "%2e%2e%2f", "/abs/path"]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with sandboxed_proxy(tmp_path_factory.mktemp("ids"), build_app(16, 4)) as box:
        yield box


@pytest.mark.parametrize("name", sorted(REFUSED_IN_PATH))
@pytest.mark.parametrize("route", [b"/v1/chat/completions", b"/v1/messages", b"/v1/models"])
def test_a_bad_id_in_the_path_is_refused_naming_the_rule(sandbox: Sandbox, name: str, route: bytes) -> None:
    method, body = (b"GET", b"") if route == b"/v1/models" else (b"POST", MESSAGES if route == b"/v1/messages" else CHAT)
    resp = sandbox.request(method, b"/s/" + REFUSED_IN_PATH[name] + route, JSON, body)
    assert resp.status == 400, (name, resp.status, resp.body[:200])
    error = orjson.loads(resp.body)["error"]  # OpenAI's shape, or Anthropic's on /v1/messages: both nest "error"
    assert RULE.decode() in error["message"]


@pytest.mark.parametrize("name", sorted(REFUSED_IN_PATH))
def test_a_bad_id_to_flush_is_refused_naming_the_rule(sandbox: Sandbox, name: str) -> None:
    resp = sandbox.request(b"POST", b"/flush?session=" + REFUSED_IN_PATH[name], JSON, b"")
    assert resp.status == 400 and RULE in resp.body, resp.body[:200]


def test_raw_dot_segments_never_reach_a_session(sandbox: Sandbox) -> None:
    # Unencoded, the URL's own dot segments are resolved before routing: no route matches.
    resp = sandbox.request(b"POST", b"/s/../../etc/passwd/v1/chat/completions", JSON, CHAT)
    assert resp.status == 404 and orjson.loads(resp.body)["error"]["message"]


@pytest.mark.parametrize("header", [b"session-id", b"X-Claude-Code-Session-Id"])
@pytest.mark.parametrize("value", HOSTILE_HEADER_VALUES)
def test_a_bad_id_in_a_header_is_hashed_to_one_safe_file(sandbox: Sandbox, header: bytes, value: str) -> None:
    hashed = "h-" + hashlib.sha256(value.encode()).hexdigest()[:32]  # docs/proxy.md#sessions, computed here
    for _ in range(2):  # stable: the same rollout keeps landing in the same file
        resp = sandbox.request(b"POST", b"/v1/chat/completions", JSON + [(header, value.encode())], CHAT)
        assert resp.status == 200, resp.body[:200]
    calls = read_out_dir(sandbox.out)[hashed]
    assert len(calls) >= 2 and {call.session_id for call in calls} == {hashed}


def test_a_garbage_traceparent_falls_back_to_the_default_session(sandbox: Sandbox) -> None:
    for value in [b"00-../../etc-00f067aa0ba902b7-01", b"zz", b"00-" + b"0" * 32 + b"-00f067aa0ba902b7-01"]:
        resp = sandbox.request(b"POST", b"/v1/chat/completions", JSON + [(b"traceparent", value)], CHAT)
        assert resp.status == 200
    assert (sandbox.out / "default.jsonl").is_file()


def test_at_the_end_nothing_left_out_and_every_file_is_0600(sandbox: Sandbox) -> None:
    assert sandbox.request(b"POST", b"/s/legit-run_1.a/v1/chat/completions", JSON, CHAT).status == 200
    assert not sandbox.created_outside_out(), sandbox.created_outside_out()
    modes = file_modes(sandbox.out)
    assert "legit-run_1.a.jsonl" in modes and set(modes.values()) == {0o600}, modes
    for calls in read_out_dir(sandbox.out).values():
        assert calls and all(call.ok for call in calls)


@pytest.fixture
def small_limit_proxy(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """An in-process proxy with a 64 kB request limit: the subprocess CLI cannot set one (see below)."""
    engine = BackgroundServer(build_app(16, 4))
    loop = LoopThread()
    config = ProxyConfig(upstream=engine.url, out=tmp_path / "out", port=0, max_request_mb=1 / 16)
    proxy = loop.run(start_proxy(config))
    try:
        yield int(proxy.url.rsplit(":", 1)[1]), tmp_path / "out"
    finally:
        loop.run(proxy.stop())
        loop.close()
        engine.close()


@pytest.mark.parametrize("route", [b"/v1/chat/completions", b"/s/big/v1/messages", b"/s/big/v1/responses"])
def test_an_oversize_body_is_refused_with_413_naming_the_option(small_limit_proxy, route: bytes) -> None:
    port, out = small_limit_proxy
    huge = orjson.dumps({"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "x" * 100_000}]})
    resp = raw_request(port, b"POST", route, JSON, huge)
    assert resp.status == 413, resp.body[:200]
    message = orjson.loads(resp.body)["error"]["message"]
    assert "--max-request-mb" in message
    assert not list(out.glob("*.jsonl"))  # refused before anything was recorded


def test_the_option_the_413_names_exists_on_the_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "components.proxy", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"})
    assert done.returncode == 0 and "--max-request-mb" in done.stdout
