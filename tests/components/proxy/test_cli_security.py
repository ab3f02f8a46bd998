"""``openforge proxy`` with a session secret and an upstream key: both work, neither is ever printed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from components.proxy import session_token

REPO = Path(__file__).resolve().parents[3]
SECRET = "cli-secret-abcdef0123456789"
UPSTREAM_KEY = "sk-cli-upstream-key-0042"
GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_cli_takes_the_secret_file_and_upstream_key_env_and_prints_neither(capturing_engine, tmp_path: Path) -> None:
    _, engine_url, seen = capturing_engine
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")  # as `echo` writes it: the newline is not part of the secret
    argv = [
        sys.executable, "-m", "components.proxy", "--upstream", engine_url, "--out", str(tmp_path / "out"),
        "--port", "0", "--session-secret-file", str(secret_file), "--max-in-flight", "8", "--upstream-retries", "1",
        "--max-session-mb", "1", "--max-request-mb", "1", "--retry-after-s", "2",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENFORGE_UPSTREAM_API_KEY": UPSTREAM_KEY}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline()
        assert "listening on" in first, first
        url = first.split("listening on ")[1].split()[0]
        token = session_token(SECRET.encode(), "r1")
        assert httpx.post(f"{url}/s/r1/v1/chat/completions", json=GOOD, timeout=10).status_code == 401
        ok = httpx.post(f"{url}/s/r1/v1/chat/completions", json=GOOD, headers={"x-api-key": token}, timeout=10)
        assert ok.status_code == 200
        big = httpx.post(f"{url}/s/r1/v1/chat/completions", json={**GOOD, "pad": "x" * 2**21}, headers={"x-api-key": token})
        assert big.status_code == 413 and "--max-request-mb" in big.text
        health = httpx.get(f"{url}/health", timeout=10).text
    finally:
        proc.send_signal(signal.SIGTERM)
        output = first + proc.communicate(timeout=20)[0]
    assert proc.returncode == 0, output
    assert seen and all(headers["Authorization"] == f"Bearer {UPSTREAM_KEY}" for headers in seen)
    recorded = (tmp_path / "out" / "r1.jsonl").read_text()
    for secret in (SECRET, UPSTREAM_KEY):
        assert secret not in output and secret not in health and secret not in recorded
