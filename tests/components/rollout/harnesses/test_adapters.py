"""Each adapter's command line, environment, config files and final-answer parsing.

The harnesses are faked (an installed marker and empty executables): what is checked is
what the adapter hands the runner. The real harnesses run in tests/e2e/test_harnesses.py.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path

import pytest

from components.core.config import HarnessConfig
from components.rollout.harnesses import HarnessAdapter, HarnessRun, get_harness
from components.rollout.harnesses._install import _MARKER
from components.rollout.harnesses.versions import NODE

BASE_URL = "http://127.0.0.1:8100/s/fix-bug-s0/v1"


def _installed(name: str, home: Path) -> HarnessAdapter:
    """The adapter, with a fake install of its pins (and of the pinned Node) under ``home``."""
    adapter = get_harness(name, home=home)
    assert adapter.installer is not None
    for folder in adapter.installer.bin_dirs(adapter.folder, home):
        folder.mkdir(parents=True, exist_ok=True)
        for program in ("claude", "codex", "openclaw", "mini", "node", "python"):
            (folder / program).write_text("#!/bin/sh\n")
    (adapter.folder / _MARKER).write_text(json.dumps({"pins": [p.spec for p in adapter.installer.pins]}))
    (home / "node").mkdir(exist_ok=True)
    (home / "node" / _MARKER).write_text(json.dumps({"pins": [NODE.spec]}))
    assert adapter.is_installed()
    return adapter


@pytest.fixture
def run(tmp_path: Path) -> HarnessRun:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "scratch" / "home").mkdir(parents=True)
    return HarnessRun(
        rollout_id="fix-bug-s0",
        base_url=BASE_URL,
        api_key="openforge-rollout",
        model="openforge-policy",
        prompt="-v looks like an option but is the task",
        workspace=tmp_path / "workspace",
        scratch_dir=tmp_path / "scratch",
        max_turns=6,
        max_tokens=300,
        time_limit_s=100.0,
    )


def test_claude_code_runs_print_mode_against_the_proxy_root(run: HarnessRun, tmp_path: Path) -> None:
    adapter = _installed("claude-code", tmp_path / "harnesses")

    command = adapter.command(run)

    argv = command.argv
    assert argv[0].endswith("/claude") and "--print" in argv
    assert argv[argv.index("--output-format") + 1] == "json"
    assert argv[argv.index("--max-turns") + 1] == "6"
    assert argv[-2:] == ["--", run.prompt]
    assert command.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8100/s/fix-bug-s0"  # it appends /v1/messages
    assert command.env["ANTHROPIC_API_KEY"] == "openforge-rollout"
    assert command.env["DISABLE_TELEMETRY"] == command.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert command.env["PATH"].startswith(str(adapter.folder / "node_modules" / ".bin"))
    # The same rollout always gets the same session id.
    assert adapter.command(run).argv == argv


def test_codex_gets_a_private_codex_home_with_the_responses_provider(run: HarnessRun, tmp_path: Path) -> None:
    adapter = _installed("codex", tmp_path / "harnesses")

    command = adapter.command(run)

    config = tomllib.loads((Path(command.env["CODEX_HOME"]) / "config.toml").read_text())
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == BASE_URL and provider["wire_api"] == "responses"
    assert command.env[provider["env_key"]] == "openforge-rollout"
    assert config["model"] == "openforge-policy"
    assert config["analytics"]["enabled"] is False and config["features"]["plugins"] is False  # no calls home
    assert Path(command.env["CODEX_HOME"]).is_relative_to(run.scratch_dir)
    assert command.argv[1] == "exec" and command.argv[-2:] == ["--", run.prompt]
    assert command.argv[command.argv.index("--cd") + 1] == str(run.workspace)


def test_codex_leaves_its_own_sandbox_off_only_when_the_runner_confines_it(run: HarnessRun, tmp_path: Path) -> None:
    adapter = _installed("codex", tmp_path / "harnesses")

    confined = adapter.command(dataclasses.replace(run, confined=True)).argv
    unconfined = adapter.command(dataclasses.replace(run, confined=False)).argv

    assert "--dangerously-bypass-approvals-and-sandbox" in confined and "--sandbox" not in confined
    assert "--dangerously-bypass-approvals-and-sandbox" not in unconfined
    assert unconfined[unconfined.index("--sandbox") + 1] == "workspace-write"


def test_openclaw_reads_a_config_file_and_the_prompt_from_a_file(run: HarnessRun, tmp_path: Path) -> None:
    adapter = _installed("openclaw", tmp_path / "harnesses")

    command = adapter.command(run)

    argv = command.argv
    config = json.loads(Path(argv[argv.index("--config") + 1]).read_text())
    provider = config["models"]["providers"]["openforge"]
    assert provider["baseUrl"] == BASE_URL and provider["api"] == "openai-completions"
    assert provider["models"][0]["maxTokens"] == 300
    assert argv[argv.index("--model") + 1] == "openforge/openforge-policy"
    assert Path(argv[argv.index("--message-file") + 1]).read_text() == run.prompt
    assert int(argv[argv.index("--timeout") + 1]) < run.time_limit_s  # it must answer before the runner kills it
    assert Path(command.env["TMPDIR"]).is_relative_to(run.scratch_dir)


def test_mini_swe_agent_gets_its_settings_as_json_values(run: HarnessRun, tmp_path: Path) -> None:
    adapter = _installed("mini-swe-agent", tmp_path / "harnesses")

    command = adapter.command(run)

    argv = command.argv
    settings = dict(argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "--config" and "=" in argv[i + 1])
    assert json.loads(settings["model.model_kwargs.api_base"]) == BASE_URL
    assert json.loads(settings["agent.step_limit"]) == 6
    assert json.loads(settings["model.model_kwargs.max_tokens"]) == 300
    assert f"--task={run.prompt}" in argv and "--exit-immediately" in argv
    assert command.env["OPENAI_API_KEY"] == "openforge-rollout"
    assert command.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"  # no price-list download at start-up
    assert command.env["PATH"].startswith(str(adapter.folder / "venv" / "bin"))


def test_mini_swe_agent_takes_the_users_own_config_keys_after_its_defaults(run: HarnessRun, tmp_path: Path) -> None:
    adapter = _installed("mini-swe-agent", tmp_path / "harnesses")
    template = "Task: {{task}}\nOne bash command per reply."
    adapter.configure(HarnessConfig(name="mini-swe-agent", settings={"agent.instance_template": template}))

    argv = adapter.command(run).argv

    configs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--config"]
    assert configs[0] == "mini.yaml"  # the defaults first: a later --config replaces their keys
    assert f"agent.instance_template={json.dumps(template)}" in configs[1:]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"name": "claude-code", "settings": {"x": 1}}, "harness 'claude-code' takes none"),
        ({"name": "mini-swe-agent", "settings": {"agent.step_limit": 3}}, "set harness.max_turns"),
        ({"name": "mini-swe-agent", "settings": {"model.model_kwargs.api_base": "http://x"}}, "the proxy serves"),
    ],
)
def test_harness_settings_the_adapter_owns_or_cannot_read_are_refused(config: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HarnessConfig(**config)


def test_cua_agent_drives_the_runners_display_with_its_telemetry_off(run: HarnessRun, tmp_path: Path) -> None:
    adapter = _installed("cua-agent", tmp_path / "harnesses")
    with pytest.raises(ValueError, match="HarnessRun.display is not set"):
        adapter.command(run)
    run = dataclasses.replace(run, display=":7")

    command = adapter.command(run)

    assert adapter.needs_desktop and not adapter.needs_browser
    assert command.argv[0] == str(adapter.folder / "venv" / "bin" / "python") and command.argv[1] == "-I"
    settings = json.loads(Path(command.argv[-1]).read_text())
    assert (settings["base_url"], settings["max_tokens"], settings["prompt"]) == (BASE_URL, 300, run.prompt)
    assert "max_steps" not in settings  # the runner's step limit stops it (it ignores its own terminate)
    assert run.api_key not in command.argv
    assert (command.env["DISPLAY"], command.env["XDG_SESSION_TYPE"]) == (":7", "x11")
    assert command.env["CUA_TELEMETRY_ENABLED"] == "false" and command.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


@pytest.mark.parametrize(
    ("name", "stdout", "files", "expected"),
    [
        ("claude-code", '{"type":"result","is_error":false,"result":"done","num_turns":2}', {}, "done"),
        ("claude-code", "not json", {}, None),
        ("openclaw", 'log line\n{\n  "ok": true,\n  "final": "done"\n}\n', {}, "done"),
        ("openclaw", '{"ok": false, "error": "timeout"}', {}, None),
        ("codex", "", {"last-message.txt": "done"}, "done"),
        ("codex", "", {}, None),
        ("mini-swe-agent", "", {"traj.json": '{"info": {"exit_status": "Submitted", "submission": "done\\n"}}'}, "done\n"),
        ("mini-swe-agent", "", {"traj.json": '{"info": {"exit_status": "LimitsExceeded"}}'}, None),
        ("cua-agent", "", {"cua-agent-result.json": '{"final_answer": "done", "ended_by": "answer"}'}, "done"),
        ("cua-agent", "", {"cua-agent-result.json": '{"final_answer": null, "ended_by": "terminate"}'}, None),
    ],
)
def test_final_answer_is_read_where_each_harness_leaves_it(
    name: str, stdout: str, files: dict[str, str], expected: str | None, run: HarnessRun, tmp_path: Path
) -> None:
    for filename, text in files.items():
        (run.scratch_dir / filename).write_text(text)

    assert get_harness(name, home=tmp_path).final_answer(run, stdout) == expected


@pytest.mark.parametrize(("mode", "base_url"), [("responses", BASE_URL), ("chat", BASE_URL), ("messages", BASE_URL.removesuffix("/v1"))])
def test_stagehand_driver_gets_the_mode_its_sdk_base_url_and_the_runners_browser(
    mode: str, base_url: str, run: HarnessRun, tmp_path: Path
) -> None:
    adapter = _installed("stagehand", tmp_path / "harnesses")
    adapter.configure(HarnessConfig(name="stagehand", mode=mode))
    browser_run = dataclasses.replace(run, browser_cdp_url="http://127.0.0.1:9222")

    command = adapter.command(browser_run)

    assert command.argv[0].endswith("/node") and command.argv[1].endswith("_stagehand_driver.mjs")
    settings = json.loads(Path(command.argv[2]).read_text())
    assert (settings["mode"], settings["base_url"], settings["max_steps"]) == (mode, base_url, 6)
    assert settings["cdp_url"] == "http://127.0.0.1:9222" and settings["api_key"] not in command.argv
    assert settings["stagehand_entry"].startswith(str(adapter.folder / "node_modules" / "@browserbasehq" / "stagehand"))
    assert command.env["PATH"].startswith(str(adapter.folder / "node_modules" / ".bin"))
    with pytest.raises(ValueError, match="browser_cdp_url"):
        adapter.command(run)  # no browser: the runner must give it one (needs_browser)


def test_stagehand_mode_defaults_to_responses_and_comes_from_the_experiment_config(tmp_path: Path) -> None:
    assert get_harness("stagehand").mode == "responses"
    assert get_harness("stagehand", config=HarnessConfig(name="stagehand", mode="chat")).mode == "chat"
    assert get_harness("stagehand").needs_browser


@pytest.mark.parametrize(
    ("result", "expected"),
    [('{"message": "Registered Kemi", "completed": true}', "Registered Kemi"), ('{"message": ""}', None), ("oops", None)],
)
def test_stagehand_final_answer_is_the_agents_message(result: str, expected: str | None, run: HarnessRun, tmp_path: Path) -> None:
    (run.scratch_dir / "stagehand-result.json").write_text(result)
    assert get_harness("stagehand", home=tmp_path).final_answer(run, "") == expected
