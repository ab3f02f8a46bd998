"""Session-wide fixtures: the tiny model, dev engines and real vLLM in subprocesses, S3 on loopback, MLflow."""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests._gui_packages import chromium_ready, desktop_ready  # noqa: F401  (fixtures for every test)
from tests._missing import missing, require
from tests._servers import EngineServer, start_dev_engine

from components.core.checkpoints import write_checkpoint_info
from components.core.services import free_port
from components.core.storage import ArtifactStore, open_store
from components.engine import init_tiny_model
from tests._runtime import PIPELINE_RUNTIME
from tests._scheduling import files_and_groups_scheduler, slow_files_first

if TYPE_CHECKING:
    from tests._vllm import VllmServer

BUCKET = "openforge-test"
VLLM_POLICY_VERSION = "1"  # the version the session's vLLM serves (root of /v1/models)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Whole files to a worker, with the users of a costly session fixture together (tests/_scheduling.py)."""
    return files_and_groups_scheduler(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow files first (tests/_scheduling.py); ``@pytest.mark.gpu`` tests skip, with the
    reason, where torch sees no CUDA device."""
    slow_files_first(items)
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run scripts/gpu_smoke.sh or pytest -m gpu on a GPU machine)")
    for item in gpu_items:
        item.add_marker(skip)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``needs(problem)`` with a problem skips, or fails under CI=true (tests/_missing.py)."""
    for mark in item.iter_markers("needs"):
        require(mark.args[0] if mark.args else None)


@pytest.fixture(scope="session")
def seed0_tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed-0 tiny Qwen2 model, written once per test session.

    The session-wide engines below take it under this name, which no folder's conftest
    overrides: through ``tiny_model_dir`` they would get whichever override the first test
    to start them saw (tests/components/trainer's has a stand-in tokenizer), for the rest
    of the worker's session."""
    return init_tiny_model(tmp_path_factory.mktemp("models") / "tiny-seed0", seed=0)


@pytest.fixture(scope="session")
def tiny_model_dir(seed0_tiny_model_dir: Path) -> Path:
    """The seed-0 tiny Qwen2 model (seed0_tiny_model_dir)."""
    return seed0_tiny_model_dir


@pytest.fixture(scope="session")
def tiny_vl_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed-0 tiny Qwen2-VL model, written once per test session."""
    from components.engine.tiny_vl_model import init_tiny_vl_model

    return init_tiny_vl_model(tmp_path_factory.mktemp("models") / "tiny-vl-seed0", seed=0)


@pytest.fixture(scope="session")
def make_dev_engine(
    seed0_tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., EngineServer]]:
    """Factory: ``make_dev_engine(script=None, model_dir=None, args=())`` starts one more dev engine.

    ``script`` is the scripted-mode JSON (a dict, written to a file for the engine);
    every engine started here is stopped at the end of the session.
    """
    started: list[EngineServer] = []
    logs = tmp_path_factory.mktemp("engine-logs")

    def start(
        script: dict[str, Any] | None = None, *, model_dir: Path | None = None, args: tuple[str, ...] = ()
    ) -> EngineServer:
        script_path = None
        if script is not None:
            script_path = logs / f"script-{len(started)}.json"
            script_path.write_text(json.dumps(script))
        engine = start_dev_engine(
            model_dir or seed0_tiny_model_dir, logs, script=script_path, name=f"dev-engine-{len(started)}", args=args
        )
        started.append(engine)
        return engine

    yield start
    for engine in started:
        engine.stop()


@pytest.fixture(scope="session")
def dev_engine(make_dev_engine: Callable[..., EngineServer]) -> EngineServer:
    """A dev engine serving the tiny model freely (no script)."""
    return make_dev_engine()


@pytest.fixture(scope="session")
def make_vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., VllmServer]]:
    """Factory: ``make_vllm(checkpoint, lora_rank=0)`` starts one more real vLLM (CPU build) on a
    committed checkpoint, as the serve step would; where vLLM is not installed it skips, saying why
    (fails under CI=true: tests/_missing.py).
    Each start costs a minute or more: use ``vllm_engine`` unless a test needs its own."""
    from tests._vllm import start_vllm, vllm_python, vllm_test_config  # config and launch modules: loaded when used

    python, why = vllm_python()
    if python is None:
        missing(why)
    started: list[VllmServer] = []

    def start(checkpoint: Path, *, lora_rank: int = 0) -> VllmServer:
        work = tmp_path_factory.mktemp(f"vllm-{len(started)}")
        server = start_vllm(checkpoint, work, vllm_test_config(python, lora_rank=lora_rank), name=f"vllm-{len(started)}")
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def vllm_engine(
    make_vllm: Callable[..., VllmServer], seed0_tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> VllmServer:
    """One real vLLM per session serving the tiny model as policy version ``VLLM_POLICY_VERSION``."""
    checkpoint = tmp_path_factory.mktemp("vllm-checkpoint") / "policy"
    shutil.copytree(seed0_tiny_model_dir, checkpoint)
    write_checkpoint_info(checkpoint, {"policy_version": VLLM_POLICY_VERSION})
    return make_vllm(checkpoint)


@pytest.fixture
def s3_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto S3 server on a free loopback port, with dummy credentials and one bucket."""
    import boto3
    from moto.server import ThreadedMotoServer

    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        # moto keeps its buckets in process-wide state: start each test from an empty server.
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10)
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.stop()


@pytest.fixture(params=["file", "s3"])
def storage_settings(request: pytest.FixtureRequest, tmp_path) -> dict[str, str | None]:
    """`storage:` settings of a config: a file:// folder, then an s3:// prefix on moto."""
    if request.param == "file":
        return {"uri": f"file://{tmp_path / 'store'}", "endpoint_url": None}
    return {"uri": f"s3://{BUCKET}/runs", "endpoint_url": request.getfixturevalue("s3_endpoint")}


@pytest.fixture
def any_store(storage_settings: dict[str, str | None]) -> ArtifactStore:
    """The same test against a file:// store and an s3:// store (moto)."""
    return open_store(storage_settings["uri"], storage_settings["endpoint_url"])


@pytest.fixture(scope="session")
def tracking_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One MLflow sqlite store per session: creating its tables takes seconds."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture(scope="session")
def quickstart_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One real iteration of examples/quickstart.yaml (the reference harness, choice mode):
    its store URI and its folder (``mlflow.db`` holds its tracking)."""
    import io

    from rich.console import Console

    from components.core.config import load_config
    from pipelines.run import run_experiment

    repo = Path(__file__).resolve().parents[1]
    work = tmp_path_factory.mktemp("quickstart")
    config = load_config(repo / "examples" / "quickstart.yaml").model_copy(deep=True)
    config.iterations = 1
    config.tasks.source = str(repo / "examples" / "tasks" / "quickstart")
    config.storage.uri = f"file://{work / 'store'}"
    config.tracking.uri = f"sqlite:///{work / 'mlflow.db'}"
    run_experiment(config, console=Console(file=io.StringIO()), workdir=work / ".openforge", runtime=PIPELINE_RUNTIME)
    return config.storage.uri, work
