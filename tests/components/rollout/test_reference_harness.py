from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.components.rollout._fake_openai import Turn, shell_call

from components.rollout.reference_harness import run_shell

SCRIPT = Path(__file__).resolve().parents[3] / "components" / "rollout" / "reference_harness.py"


def _run_harness(base_url: str, workspace: Path, answer: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = [
        sys.executable, str(SCRIPT),
        "--base-url", base_url,
        "--model", "policy",
        "--prompt", "make a file",
        "--workspace", str(workspace),
        "--max-turns", "4",
        "--max-tokens", "16",
        "--answer-file", str(answer),
        *extra,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})


def test_tool_call_runs_in_workspace_and_answer_is_written(fake_openai, tmp_path: Path) -> None:
    fake = fake_openai([shell_call("echo made > made.txt && pwd"), Turn(content="all done")])
    workspace = tmp_path / "ws"
    workspace.mkdir()

    result = _run_harness(fake.base_url("r-s0"), workspace, tmp_path / "answer.txt")

    assert result.returncode == 0, result.stderr
    assert (workspace / "made.txt").read_text() == "made\n"
    assert (tmp_path / "answer.txt").read_text() == "all done"
    assert fake.sessions == ["r-s0", "r-s0"]
    first, second = fake.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["shell"]
    assert first["max_tokens"] == 16 and first["model"] == "policy"
    # The second call resends the history: the tool call, then its output (workspace as cwd).
    assistant, tool = second["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["name"] == "shell"
    assert tool["role"] == "tool" and tool["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert "[exit code 0]" in tool["content"] and str(workspace) in tool["content"]


def test_api_error_exits_2_with_a_message(fake_openai, tmp_path: Path) -> None:
    fake = fake_openai([Turn(content="never")], fail_status=500)
    workspace = tmp_path / "ws"
    workspace.mkdir()

    result = _run_harness(fake.base_url(), workspace, tmp_path / "answer.txt", "--max-retries", "0")

    assert result.returncode == 2
    assert "model API error" in result.stderr and fake.url in result.stderr
    assert not (tmp_path / "answer.txt").exists()


def test_a_server_error_is_retried_until_it_recovers(fake_openai, tmp_path: Path) -> None:
    fake = fake_openai([Turn(content="recovered")], fail_status=503, fail_calls=2)
    workspace = tmp_path / "ws"
    workspace.mkdir()

    result = _run_harness(fake.base_url(), workspace, tmp_path / "answer.txt", "--max-retries", "2")

    assert result.returncode == 0, result.stderr
    assert len(fake.requests) == 3 and fake.requests[0] == fake.requests[2]
    assert (tmp_path / "answer.txt").read_text() == "recovered"


def test_a_refused_request_is_not_retried(fake_openai, tmp_path: Path) -> None:
    fake = fake_openai([Turn(content="never")], fail_status=400, fail_message="prompt too long")
    workspace = tmp_path / "ws"
    workspace.mkdir()

    result = _run_harness(fake.base_url(), workspace, tmp_path / "answer.txt", "--max-retries", "2")

    assert result.returncode == 2
    assert len(fake.requests) == 1
    assert "HTTP 400" in result.stderr and "prompt too long" in result.stderr


def test_an_unreachable_server_is_a_model_api_error(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"

    result = _run_harness(url, workspace, tmp_path / "answer.txt", "--max-retries", "0")

    assert result.returncode == 2
    assert "connection failed" in result.stderr


def test_turn_limit_ends_normally_with_the_last_text(fake_openai, tmp_path: Path) -> None:
    looping = Turn(content="still working", tool_calls=[("shell", '{"command": "true"}')])
    fake = fake_openai([looping])
    workspace = tmp_path / "ws"
    workspace.mkdir()

    result = _run_harness(fake.base_url(), workspace, tmp_path / "answer.txt")

    assert result.returncode == 0, result.stderr
    assert len(fake.requests) == 4
    assert (tmp_path / "answer.txt").read_text() == "still working"


def test_malformed_tool_calls_become_error_results(fake_openai, tmp_path: Path) -> None:
    bad = Turn(tool_calls=[("shell", "not json"), ("browser", "{}"), ("shell", '{"cmd": "ls"}')])
    fake = fake_openai([bad, Turn(content="ok")])
    workspace = tmp_path / "ws"
    workspace.mkdir()

    result = _run_harness(fake.base_url(), workspace, tmp_path / "answer.txt")

    assert result.returncode == 0, result.stderr
    results = [m["content"] for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert len(results) == 3
    assert "not valid JSON" in results[0]
    assert "unknown tool 'browser'" in results[1]
    assert "needs {\"command\"" in results[2]


def test_usage_error_exits_non_zero(tmp_path: Path) -> None:
    result = _run_harness("http://127.0.0.1:9/v1", tmp_path / "missing", tmp_path / "answer.txt")
    assert result.returncode != 0 and "is not a directory" in result.stderr


def test_command_timeout_kills_the_command(tmp_path: Path) -> None:
    output = run_shell("echo started; sleep 30", tmp_path, timeout_s=0.5, max_output_bytes=1000)
    assert output.startswith("[timed out after 0.5s (killed)]")
    assert "started" in output


def test_long_output_keeps_both_ends(tmp_path: Path) -> None:
    output = run_shell("echo BEGIN; head -c 20000 /dev/zero | tr '\\0' x; echo; echo END", tmp_path, 10, 200)
    assert "BEGIN" in output and "END" in output and "bytes truncated" in output
    assert len(output) < 400
