"""The smallest end-to-end run: tiny model, dev engine, recording proxy, one recorded call.

``make run`` calls this until the RL pipeline lands; it shows a new user the whole
recording path on a CPU in seconds and where the recorded trajectory lies.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from components.core import read_session
from components.core.services import free_port, openforge_argv, start_service

SESSION = "quickstart"
PROMPT = "List the files in the workspace."


def _ensure_tiny_model(workdir: Path) -> Path:
    model_dir = workdir / "models" / "tiny-seed0"
    if not (model_dir / "config.json").exists():
        from components.engine.tiny_model import init_tiny_model

        init_tiny_model(model_dir, seed=0)
    return model_dir


def _chat(base_url: str) -> dict:
    body = json.dumps(
        {"model": "policy", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 24}
    ).encode()
    req = urllib.request.Request(
        f"{base_url}/s/{SESSION}/v1/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)


def run_quickstart(workdir: Path) -> Path:
    """Serve the tiny model, record one call through the proxy, return the session file."""
    workdir.mkdir(parents=True, exist_ok=True)
    model_dir = _ensure_tiny_model(workdir)
    out_dir = workdir / "trajectories"
    logs = workdir / "logs"
    engine_port, proxy_port = free_port(), free_port()
    engine_argv = openforge_argv("engine", "serve", "--model", str(model_dir), "--port", str(engine_port))
    with start_service("engine", engine_argv, port=engine_port, log_dir=logs) as engine:
        proxy_argv = openforge_argv(
            "proxy", "--upstream", engine.url, "--out", str(out_dir), "--port", str(proxy_port), "--training"
        )
        with start_service("proxy", proxy_argv, port=proxy_port, log_dir=logs) as proxy:
            _chat(proxy.url)
    return out_dir / f"{SESSION}.jsonl"


def print_summary(session_file: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    calls = read_session(session_file)
    table = Table(title=f"Recorded calls in {session_file}")
    for column in ("call", "policy", "prompt tokens", "completion tokens", "mean logprob", "finish"):
        table.add_column(column)
    for call in calls:
        mean_lp = sum(call.completion_logprobs) / max(len(call.completion_logprobs), 1)
        table.add_row(
            str(call.call_index),
            str(call.policy_version),
            str(len(call.prompt_token_ids)),
            str(len(call.completion_token_ids)),
            f"{mean_lp:.3f}",
            str(call.finish_reason),
        )
    console = Console()
    console.print(table)
    console.print(f"Each line of {session_file} is one call, token for token (docs/trajectory-schema.md).")
