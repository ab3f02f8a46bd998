"""`openforge deploy`, `submit` and `status` against a loopback server that records the Argo API calls."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from components.core.config import ExperimentConfig
from pipelines.cli import app
from pipelines.cluster import ArgoServer, ClusterError, deploy, one_iteration_workflow, server_from_env, submit, workflow_status
from pipelines.compile import compile_config, manifest_of_kind
from tests.pipelines._manifests import CLUSTER_EXAMPLE, QUICKSTART, cluster_example_config, quickstart_config
from tests.pipelines.cluster.argo_server import RecordingArgoServer

TOKEN = "secret-token"


@pytest.fixture
def argo() -> Iterator[RecordingArgoServer]:
    server = RecordingArgoServer(token=TOKEN).start()
    yield server
    server.stop()


@pytest.fixture
def config() -> ExperimentConfig:
    return cluster_example_config()


def _server(argo: RecordingArgoServer, token: str | None = TOKEN) -> ArgoServer:
    return ArgoServer(url=f"{argo.url}/", namespace="openforge", token=f"Bearer {token}" if token else None, token_source="test")


def _without_version(doc: dict) -> dict:
    meta = {k: v for k, v in doc["metadata"].items() if k != "resourceVersion"}
    return {**doc, "metadata": meta}


def test_deploy_creates_exactly_the_compiled_template_and_cron(argo: RecordingArgoServer, config: ExperimentConfig) -> None:
    deployed = deploy(config, _server(argo))
    compiled = compile_config(config)
    template, cron = manifest_of_kind(compiled, "WorkflowTemplate"), manifest_of_kind(compiled, "CronWorkflow")
    writes = argo.writes()
    assert [(c.method, c.path) for c in writes] == [
        ("POST", "/api/v1/workflow-templates/openforge"),
        ("POST", "/api/v1/cron-workflows/openforge"),
    ]
    assert writes[0].body == {"template": template}
    assert writes[1].body == {"cronWorkflow": cron}
    assert all(c.authorization == f"Bearer {TOKEN}" for c in argo.calls)
    assert [(d.kind, d.name, d.action) for d in deployed] == [
        ("WorkflowTemplate", "cluster-quickstart-iteration", "created"),
        ("CronWorkflow", "cluster-quickstart-continual", "created"),
    ]
    assert deployed[0].link == f"{argo.url}/workflow-templates/openforge/cluster-quickstart-iteration"


def test_deploy_again_updates_in_place_naming_the_version_it_replaces(
    argo: RecordingArgoServer, config: ExperimentConfig
) -> None:
    deploy(config, _server(argo))
    changed = config.model_copy(update={"seed": 7})
    deployed = deploy(changed, _server(argo))
    puts = [c for c in argo.writes() if c.method == "PUT"]
    assert [c.path for c in puts] == [
        "/api/v1/workflow-templates/openforge/cluster-quickstart-iteration",
        "/api/v1/cron-workflows/openforge/cluster-quickstart-continual",
    ]
    assert puts[0].body["template"]["metadata"]["resourceVersion"] == "1"
    assert _without_version(puts[0].body["template"]) == manifest_of_kind(compile_config(changed), "WorkflowTemplate")
    assert {d.action for d in deployed} == {"updated"}
    stored = argo.objects[("workflow-templates", "openforge", "cluster-quickstart-iteration")]
    assert "seed: 7" in next(p["value"] for p in stored["spec"]["arguments"]["parameters"] if p["name"] == "config")


def test_submit_sends_the_compiled_bounded_workflow_and_links_to_it(argo: RecordingArgoServer, config: ExperimentConfig) -> None:
    submitted = submit(config, _server(argo))
    (call,) = argo.writes()
    assert (call.method, call.path) == ("POST", "/api/v1/workflows/openforge")
    assert call.body == {"workflow": manifest_of_kind(compile_config(config), "Workflow")}
    assert submitted.name == "cluster-quickstart-train-00001"
    assert submitted.link == f"{argo.url}/workflows/openforge/cluster-quickstart-train-00001"


def test_submit_once_sends_what_the_cron_would_run(argo: RecordingArgoServer, config: ExperimentConfig) -> None:
    submit(config, _server(argo), once=True)
    (call,) = argo.writes()
    cron = manifest_of_kind(compile_config(config), "CronWorkflow")
    assert call.body == {"workflow": one_iteration_workflow(config)}
    assert call.body["workflow"]["spec"] == cron["spec"]["workflowSpec"]


def test_status_reports_the_phase_and_each_failed_step(argo: RecordingArgoServer, config: ExperimentConfig) -> None:
    name = submit(config, _server(argo)).name
    argo.objects[("workflows", "openforge", name)]["status"] = {
        "phase": "Failed",
        "progress": "7/9",
        "startedAt": "2026-11-30T08:00:00Z",
        "finishedAt": "2026-11-30T08:10:00Z",
        "message": "child failed",
        "nodes": {
            "a": {"id": "a", "name": f"{name}.iteration-0.train", "displayName": "train", "type": "Pod", "phase": "Failed",
                  "message": "OOMKilled (exit code 137)"},
            "b": {"id": "b", "name": f"{name}.iteration-0", "displayName": "iteration-0", "type": "DAG", "phase": "Failed"},
            "c": {"id": "c", "name": f"{name}.iteration-0.prepare", "displayName": "prepare", "type": "Pod",
                  "phase": "Succeeded"},
        },
    }  # fmt: skip
    status = workflow_status(name, _server(argo))
    assert (status.phase, status.progress, status.message) == ("Failed", "7/9", "child failed")
    assert status.failed_nodes == [("train", "OOMKilled (exit code 137)")]
    assert status.started_at is not None and status.started_at.startswith("2026-11-30")


def test_a_wrong_token_is_a_clear_error_naming_the_fix(argo: RecordingArgoServer, config: ExperimentConfig) -> None:
    with pytest.raises(ClusterError, match=r"refused the credentials \(test, HTTP 401\).*ARGO_TOKEN"):
        deploy(config, _server(argo, token="wrong"))
    assert argo.writes() == []


def test_a_forbidden_token_points_at_the_submitter_role(argo: RecordingArgoServer, config: ExperimentConfig) -> None:
    argo.forbidden.add("/api/v1/workflows/openforge")
    with pytest.raises(ClusterError, match=r"HTTP 403.*openforge-submitter"):
        submit(config, _server(argo))


def test_an_unreachable_server_is_a_clear_error_naming_the_fix(config: ExperimentConfig) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ArgoServer(url=f"http://127.0.0.1:{port}/", namespace="openforge")
    with pytest.raises(ClusterError, match=r"unreachable.*ARGO_SERVER.*port-forward"):
        submit(config, server)


def test_server_comes_from_the_argo_cli_variables(config: ExperimentConfig) -> None:
    env = {"ARGO_SERVER": "argo.example:2746", "ARGO_TOKEN": "Bearer abc", "ARGO_INSECURE_SKIP_VERIFY": "true"}
    server = server_from_env(config.cluster, env)
    assert (server.url, server.token, server.verify_ssl) == ("https://argo.example:2746/", "Bearer abc", False)
    plain = server_from_env(config.cluster, {"ARGO_SERVER": "localhost:2746", "ARGO_SECURE": "false"})
    assert plain.url == "http://localhost:2746/"
    with pytest.raises(ClusterError, match="set ARGO_SERVER"):
        server_from_env(config.cluster, {})


def test_without_argo_token_the_kubeconfig_users_token_is_used(config: ExperimentConfig, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "current-context": "prod",
                "contexts": [{"name": "prod", "context": {"cluster": "c", "user": "robot"}}],
                "users": [{"name": "robot", "user": {"token": "from-kubeconfig"}}, {"name": "me", "user": {"exec": {}}}],
            }
        )
    )
    env = {"ARGO_SERVER": "https://argo:2746", "KUBECONFIG": str(kubeconfig)}
    server = server_from_env(config.cluster, env)
    assert server.token == "from-kubeconfig" and "robot" in server.token_source
    kubeconfig.write_text(kubeconfig.read_text().replace("user: robot", "user: me"))
    server = server_from_env(config.cluster, env)
    assert server.token is None and "exec plugins" in server.token_source


def test_cli_deploy_submit_status(argo: RecordingArgoServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGO_SERVER", argo.url)
    monkeypatch.setenv("ARGO_TOKEN", TOKEN)
    deployed = CliRunner().invoke(app, ["deploy", str(CLUSTER_EXAMPLE)])
    assert deployed.exit_code == 0, deployed.output
    assert "created WorkflowTemplate cluster-quickstart-iteration" in deployed.output
    submitted = CliRunner().invoke(app, ["submit", str(CLUSTER_EXAMPLE)])
    assert submitted.exit_code == 0, submitted.output
    name = submitted.output.splitlines()[0]
    assert f"Argo UI: {argo.url}/workflows/openforge/{name}" in submitted.output
    status = CliRunner().invoke(app, ["status", name])
    assert status.exit_code == 0 and f"{name}: Pending" in status.output
    monkeypatch.setenv("ARGO_TOKEN", "expired")
    refused = CliRunner().invoke(app, ["submit", str(CLUSTER_EXAMPLE)])
    assert refused.exit_code == 1 and "ARGO_TOKEN" in refused.output


def test_a_config_that_only_works_on_this_machine_is_refused_before_any_call(argo: RecordingArgoServer) -> None:
    with pytest.raises(ClusterError) as refused:
        deploy(quickstart_config(), _server(argo))
    message = str(refused.value)
    for words in ("storage.uri is 'file://", "tasks.source is 'examples/tasks/quickstart'", "tracking.uri is 'sqlite:"):
        assert words in message
    assert argo.calls == []


def test_cli_eval_submit_sends_the_compiled_evaluation_and_says_where_its_results_land(
    argo: RecordingArgoServer, config: ExperimentConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.evaluate import eval_config

    monkeypatch.setenv("ARGO_SERVER", argo.url)
    monkeypatch.setenv("ARGO_TOKEN", TOKEN)
    submitted = CliRunner().invoke(app, ["eval", str(CLUSTER_EXAMPLE), "--submit", "--id", "nightly", "--samples", "2"])

    assert submitted.exit_code == 0, submitted.output
    (call,) = argo.writes()
    evaluation = eval_config(config, samples=2, eval_id="nightly")
    assert (call.method, call.path) == ("POST", "/api/v1/workflows/openforge")
    assert call.body == {"workflow": manifest_of_kind(compile_config(evaluation), "Workflow")}
    assert call.body["workflow"]["metadata"]["generateName"] == f"{config.name}-eval-"
    name = submitted.output.splitlines()[0]
    assert f"Argo UI: {argo.url}/workflows/openforge/{name}" in submitted.output
    assert f"{config.storage.uri.rstrip('/')}/{config.name}/evals/nightly/summary.json" in submitted.output


def test_cli_eval_submit_refuses_a_local_config_and_both_modes_at_once(
    argo: RecordingArgoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGO_SERVER", argo.url)
    monkeypatch.setenv("ARGO_TOKEN", TOKEN)
    local = CliRunner().invoke(app, ["eval", str(QUICKSTART), "--submit"])
    assert local.exit_code == 1 and "storage.uri is 'file://" in local.output
    both = CliRunner().invoke(app, ["eval", str(CLUSTER_EXAMPLE), "--submit", "--compile-only"])
    assert both.exit_code == 2 and "exclude each other" in both.output
    assert argo.calls == []
