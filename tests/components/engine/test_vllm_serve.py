"""The serve step on vLLM: its command line and environment, staging, and the readiness gate.

The command is checked as data, and the step's failure paths run against ``fake_vllm.py``
(an engine that dies, serves another version, stops by itself: seconds, where a real vLLM
start costs a minute or more). Real vLLM serving through the step is in test_vllm_real.py.
The gate is also run against a real dev engine: both must pass or fail it alike.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

import pytest
from tests._servers import start_dev_engine

from components.core.checkpoints import write_checkpoint_info
from components.core.config import ExperimentConfig
from components.core.services import free_port
from components.engine.readiness import EngineNotReady, served_policy, wait_until_serving
from components.engine.vllm_launch import API_SERVER, StagedPolicy, vllm_serve_command
from components.engine.vllm_serve import serve_vllm, stage_policy
from components.proxy.upstream import parse_models

FAKE_VLLM = Path(__file__).with_name("fake_vllm.py")


def _config(lora_rank: int = 0, **vllm) -> ExperimentConfig:
    trainer = {"backend": "verl", "lora": {"rank": lora_rank}} if lora_rank else {}
    return ExperimentConfig(
        name="unit", tasks={"source": "t"}, engine={"kind": "vllm", "max_model_len": 4096, "vllm": vllm}, trainer=trainer
    )


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.fixture
def checkpoint(tiny_model_dir, tmp_path) -> Path:
    """Checkpoint version 3 of the tiny model, as the train step commits it."""
    out = tmp_path / "checkpoint"
    shutil.copytree(tiny_model_dir, out)
    write_checkpoint_info(out, {"policy_version": "3"})
    return out


@pytest.fixture
def lora_checkpoint(checkpoint) -> Path:
    (checkpoint / "lora_adapter").mkdir()
    (checkpoint / "lora_adapter" / "adapter_config.json").write_text('{"r": 8}')
    return checkpoint


@pytest.fixture
def fake_vllm(tmp_path) -> str:
    """An executable standing in for vLLM's python (``engine.vllm.python``) that runs fake_vllm.py."""
    path = tmp_path / "bin" / "python"
    path.parent.mkdir()
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_VLLM}" "$@"\n')
    path.chmod(0o755)
    return str(path)


def test_full_mode_serves_the_version_folder_with_the_flags_recorded_training_needs(tmp_path):
    launch = vllm_serve_command(_config(), StagedPolicy(tmp_path, "3", "3"), host="0.0.0.0", port=8000)
    argv = launch.argv

    # root "3" = the policy version
    assert argv[:5] == ["python3", "-m", API_SERVER, "--model", "3"] and launch.cwd == tmp_path
    assert _flag(argv, "--served-model-name") == "policy"
    assert _flag(argv, "--logprobs-mode") == "processed_logprobs"
    assert _flag(argv, "--generation-config") == "vllm"  # no sampling defaults from the checkpoint
    assert (_flag(argv, "--host"), _flag(argv, "--port"), _flag(argv, "--max-model-len")) == ("0.0.0.0", "8000", "4096")
    assert (_flag(argv, "--dtype"), _flag(argv, "--tensor-parallel-size"), _flag(argv, "--seed")) == ("bfloat16", "1", "0")
    assert "--enable-auto-tool-choice" in argv and _flag(argv, "--tool-call-parser") == "hermes"
    assert "--enable-lora" not in argv and "--lora-modules" not in argv
    assert "--return-tokens-as-token-ids" not in argv  # token ids come from return_token_ids per request
    assert "--kv-cache-memory-bytes" not in argv  # sized by gpu_memory_utilization unless set
    assert launch.env == {}


def test_lora_mode_serves_frozen_base_weights_and_the_adapter_under_the_policy_name(tmp_path):
    staged = StagedPolicy(tmp_path, "3", "base", adapter="3")

    launch = vllm_serve_command(_config(lora_rank=16, max_lora_rank=32), staged, host="0.0.0.0", port=8000)
    argv = launch.argv

    assert _flag(argv, "--model") == "base" and _flag(argv, "--served-model-name") == "policy-base"
    assert "--enable-lora" in argv and (_flag(argv, "--max-lora-rank"), _flag(argv, "--max-loras")) == ("32", "1")
    assert json.loads(_flag(argv, "--lora-modules")) == {"name": "policy", "path": "3", "base_model_name": "policy-base"}
    assert launch.env == {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}


def test_lora_training_before_its_first_adapter_serves_the_base_as_the_policy(tmp_path):
    launch = vllm_serve_command(_config(lora_rank=16), StagedPolicy(tmp_path, "0", "0"), host="h", port=1)

    assert _flag(launch.argv, "--served-model-name") == "policy" and "--lora-modules" not in launch.argv
    assert "--enable-lora" in launch.argv  # ready for the adapters to come


def test_extra_arguments_and_environment_come_last(tmp_path):
    config = _config(extra_args=["--max-num-seqs", "64"], env={"VLLM_LOGGING_LEVEL": "DEBUG"}, tool_call_parser=None)

    launch = vllm_serve_command(config, StagedPolicy(tmp_path, "3", "3"), host="h", port=1)

    assert launch.argv[-2:] == ["--max-num-seqs", "64"]
    assert "--enable-auto-tool-choice" not in launch.argv
    assert launch.env == {"VLLM_LOGGING_LEVEL": "DEBUG"}


def test_the_cpu_settings_size_the_kv_cache_in_bytes_and_keep_the_dtype(tmp_path):
    config = _config(kv_cache_gib=1.5, dtype="float32", python="/opt/venv/bin/python")

    argv = vllm_serve_command(config, StagedPolicy(tmp_path, "3", "3"), host="h", port=1).argv

    assert argv[0] == "/opt/venv/bin/python"
    assert (_flag(argv, "--kv-cache-memory-bytes"), _flag(argv, "--dtype")) == (str(3 * 2**29), "float32")


def test_a_relative_python_is_found_from_where_the_step_starts_not_from_vllms_folder(tmp_path, monkeypatch):
    venv = tmp_path / "repo" / ".venv-vllm" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)  # a venv's python is a link out of the venv
    monkeypatch.chdir(tmp_path / "repo")

    launch = vllm_serve_command(_config(python=".venv-vllm/bin/python"), StagedPolicy(tmp_path, "3", "3"), host="h", port=1)

    # Absolute (vLLM runs in the staging folder) but not resolved: the link's target has no vLLM.
    assert launch.argv[0] == str(venv / "python")
    assert vllm_serve_command(_config(), StagedPolicy(tmp_path, "3", "3"), host="h", port=1).argv[0] == "python3"


@pytest.mark.parametrize("args", [["--generation-config", "auto"], ["--logprobs-mode=raw_logprobs"]])
def test_extra_arguments_cannot_override_the_flags_records_depend_on(args):
    # Appended last they would win: vLLM would take the checkpoint's sampling defaults again.
    with pytest.raises(ValueError, match=f"extra_args may not set {args[0].split('=')[0]}"):
        _config(extra_args=args)


def test_staging_links_the_checkpoint_under_its_version(checkpoint, tmp_path):
    staged = stage_policy(checkpoint, tmp_path / "served")

    assert (staged.version, staged.model, staged.adapter) == ("3", "3", None)
    assert (staged.root / "3").resolve() == checkpoint.resolve()


def test_staging_a_lora_checkpoint_splits_base_and_adapter(lora_checkpoint, tmp_path):
    staged = stage_policy(lora_checkpoint, tmp_path / "served")

    assert (staged.model, staged.adapter) == ("base", "3")
    assert (staged.root / "3" / "adapter_config.json").is_file() and (staged.root / "base" / "config.json").is_file()


def _serve(config, checkpoint, tmp_path, fake_vllm, monkeypatch, **env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    config.engine.vllm.python = fake_vllm
    return serve_vllm(config, checkpoint, tmp_path / "work", host="127.0.0.1", port=free_port())


def test_serve_step_gates_on_the_version_then_stops_vllm_on_sigterm(checkpoint, tmp_path, fake_vllm, monkeypatch, capfd):
    import components.engine.vllm_serve as vllm_serve

    record = tmp_path / "argv.json"
    original = signal.getsignal(signal.SIGTERM)
    gate = vllm_serve.wait_until_serving
    stopper: list[threading.Timer] = []

    def gate_then_sigterm(*args, **kwargs):
        model = gate(*args, **kwargs)
        # What Argo does to the daemon once the DAG is done; the step must forward it to vLLM.
        stopper.append(threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)))
        stopper[0].start()
        return model

    monkeypatch.setattr(vllm_serve, "wait_until_serving", gate_then_sigterm)

    code = _serve(_config(), checkpoint, tmp_path, fake_vllm, monkeypatch, FAKE_VLLM_ARGV_FILE=str(record))

    assert code == 0
    assert "vLLM serves policy version 3 as 'policy'" in capfd.readouterr().out
    assert json.loads(record.read_text())["argv"][:4] == ["-m", API_SERVER, "--model", "3"]
    assert signal.getsignal(signal.SIGTERM) is original


def test_lora_checkpoint_is_served_as_its_adapter_and_passes_the_gate(lora_checkpoint, tmp_path, fake_vllm, monkeypatch):
    config = _config(lora_rank=8)
    config.engine.restarts = 0
    code = _serve(config, lora_checkpoint, tmp_path, fake_vllm, monkeypatch, FAKE_VLLM_EXIT_AFTER_S="1")

    assert code == 0  # served until the fake engine stopped by itself


def test_an_engine_that_exits_unasked_is_started_again_on_its_address_up_to_engine_restarts(
    checkpoint, tmp_path, fake_vllm, monkeypatch, capfd
):
    config = _config()
    config.engine.restarts = 2

    code = _serve(config, checkpoint, tmp_path, fake_vllm, monkeypatch, FAKE_VLLM_EXIT_AFTER_S="1")

    out = capfd.readouterr().out
    assert code == 0  # the last start's code, once the restarts are spent
    assert out.count("vLLM serves policy version 3") == 3  # each start passed the gate again
    assert "starting it again (1 of engine.restarts 2)" in out and "starting it again (2 of engine.restarts 2)" in out
    assert "(3 of" not in out


def test_a_stop_while_the_engine_starts_again_is_a_stop_not_a_failed_start(checkpoint, tmp_path, fake_vllm, monkeypatch, capfd):
    import components.engine.vllm_serve as vllm_serve

    gate, calls = vllm_serve.wait_until_serving, []

    def sigterm_on_the_second_start(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # Argo stops the daemon just as the crashed engine starts again
            os.kill(os.getpid(), signal.SIGTERM)
        return gate(*args, **kwargs)

    monkeypatch.setattr(vllm_serve, "wait_until_serving", sigterm_on_the_second_start)
    config = _config()
    config.engine.restarts = 2

    code = _serve(config, checkpoint, tmp_path, fake_vllm, monkeypatch, FAKE_VLLM_EXIT_AFTER_S="1")

    assert len(calls) == 2 and code in (0, -signal.SIGTERM)  # stopped as asked, early or late in its start
    assert "starting it again (1 of engine.restarts 2)" in capfd.readouterr().out


def test_an_engine_serving_another_version_fails_the_gate_naming_both(checkpoint, tmp_path, fake_vllm, monkeypatch):
    with pytest.raises(EngineNotReady, match=r"serves policy version '/abs/path/3' .* needs '3'"):
        _serve(_config(), checkpoint, tmp_path, fake_vllm, monkeypatch, FAKE_VLLM_ROOT="/abs/path/3")


def test_an_engine_that_dies_while_loading_fails_at_once_with_its_exit_code(checkpoint, tmp_path, fake_vllm, monkeypatch):
    with pytest.raises(EngineNotReady, match="exited with code 3"):
        _serve(_config(), checkpoint, tmp_path, fake_vllm, monkeypatch, FAKE_VLLM_EXIT_CODE="3")


def test_a_machine_without_vllm_gets_the_fix(checkpoint, tmp_path):
    with pytest.raises(EngineNotReady, match=r"'no-such-python' does not exist .* `make vllm`"):
        serve_vllm(_config(python="no-such-python"), checkpoint, tmp_path / "w", host="127.0.0.1", port=free_port())


def test_the_gate_and_the_proxy_read_the_dev_engine_like_vllm(checkpoint, tmp_path):
    """The dev engine reports the version as policy_version, vLLM as root: one parser reads both."""
    engine = start_dev_engine(checkpoint, tmp_path / "logs", served_model_name="policy")
    try:
        assert wait_until_serving(engine.url, "3", timeout_s=30) == "policy"
        assert served_policy(engine.url) == ("policy", "3")
        with pytest.raises(EngineNotReady, match=r"'3' .* needs '4'"):
            wait_until_serving(engine.url, "4", timeout_s=30)
    finally:
        engine.stop()


def test_the_proxy_calls_the_adapter_when_vllm_lists_it_after_the_base():
    card = {"object": "model", "owned_by": "vllm"}
    body = json.dumps({"data": [
        {**card, "id": "policy-base", "root": "base", "parent": None},
        {**card, "id": "policy", "root": "3", "parent": "policy-base"},
    ]}).encode()  # fmt: skip

    models = parse_models(body)

    assert (models.first_id, models.policy_version(None), models.policy_version("policy")) == ("policy", "3", "3")
