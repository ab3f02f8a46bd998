"""The pod `--runtime podman` hands to `podman kube play`: the template's own containers, off
the host network (the proxy alone gets the engine's channel), the pod's ports mapped, volumes
onto the sandbox, the manifest's users."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.proxy.cli import UPSTREAM_SOCKET_ENV
from pipelines.executor import _podman
from pipelines.executor._channel import CHANNEL_PATH
from pipelines.executor._podman import PodmanOptions, PodmanPod, pod_spec, podman_problem
from pipelines.executor._sandbox import PodPlan, plan_pod
from pipelines.executor._templating import mark
from pipelines.run import local_podman_options

CONFIG = "storage:\n  uri: file:///work/runs\n"  # data: must reach the pod unchanged, /work and all

TEMPLATE = {
    "name": "rollout",
    "container": {
        "image": "openforge/runtime:0.1.0",
        "command": ["openforge", "step", "rollout", "--proxy-url", "http://127.0.0.1:8100", "--out", "/work/out"],
        "env": [{"name": "OPENFORGE_CONFIG_YAML", "value": mark(CONFIG)}],
        "securityContext": {"readOnlyRootFilesystem": True},
        "volumeMounts": [{"name": "work", "mountPath": "/work"}, {"name": "tmp", "mountPath": "/tmp"}],
    },
    "sidecars": [
        {
            "name": "proxy",
            "image": "openforge/proxy:0.1.0",
            "command": ["openforge", "proxy", "--upstream", mark("http://127.0.0.1:41234"), "--port", "8100"],
            "ports": [{"containerPort": 8100}],
            "volumeMounts": [{"name": "work", "mountPath": "/work"}],
        }
    ],
    "volumes": [{"name": "work", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}],
}


def _spec(tmp_path: Path, options: PodmanOptions = PodmanOptions(image="local:1")) -> tuple[dict, PodPlan]:
    plan = plan_pod(TEMPLATE, {}, tmp_path / "sandbox", tmp_path, {}, "test")
    return pod_spec("openforge-test", plan, TEMPLATE, {"runAsUser": 1000, "runAsNonRoot": True}, options), plan


def test_pod_keeps_the_templates_containers_users_and_container_paths(tmp_path: Path) -> None:
    spec, plan = _spec(tmp_path)
    main, proxy = spec["spec"]["containers"]
    assert (main["name"], proxy["name"]) == ("main", "proxy")
    assert spec["spec"]["securityContext"] == {"runAsUser": 1000, "runAsNonRoot": True}
    assert main["securityContext"] == {"readOnlyRootFilesystem": True}
    assert main["command"][-2:] == ["--out", "/work/out"]  # mounted there, so not rewritten
    assert {"name": "OPENFORGE_CONFIG_YAML", "value": CONFIG} in main["env"]
    volumes = {v["name"]: v["hostPath"]["path"] for v in spec["spec"]["volumes"]}
    assert volumes["work"] == str(plan.sandbox / "volumes" / "work")
    assert (plan.sandbox / "volumes" / "work").stat().st_mode & 0o777 == 0o777  # writable by user 1000


def test_pod_runs_off_the_host_network_with_the_pods_ports_mapped_to_free_ones(tmp_path: Path) -> None:
    spec, plan = _spec(tmp_path)
    main, proxy = spec["spec"]["containers"]
    port = plan.ports.ports[8100]
    assert spec["spec"]["hostNetwork"] is False
    assert proxy["command"][-2:] == ["--port", str(port)]
    assert f"http://127.0.0.1:{port}" in main["command"]
    assert "http://127.0.0.1:41234" in proxy["command"]  # the serve address is data: left as given


def test_only_the_proxy_gets_the_channel_to_the_engine(tmp_path: Path) -> None:
    plan = plan_pod(TEMPLATE, {}, tmp_path / "sandbox", tmp_path, {}, "test")
    socket = tmp_path / "engine.sock"
    spec = pod_spec("openforge-test", plan, TEMPLATE, {}, PodmanOptions(image="local:1"), [socket])
    main, proxy = spec["spec"]["containers"]

    channel = [v for v in spec["spec"]["volumes"] if v["hostPath"]["type"] == "Socket"]
    assert channel == [{"name": channel[0]["name"], "hostPath": {"path": str(socket), "type": "Socket"}}]
    assert {"name": channel[0]["name"], "mountPath": CHANNEL_PATH} in proxy["volumeMounts"]
    assert {"name": UPSTREAM_SOCKET_ENV, "value": CHANNEL_PATH} in proxy["env"]
    assert all(m["name"] != channel[0]["name"] for m in main["volumeMounts"])
    assert all(e["name"] != UPSTREAM_SOCKET_ENV for e in main["env"])


def test_engine_replicas_each_get_a_socket_in_the_upstreams_order(tmp_path: Path) -> None:
    plan = plan_pod(TEMPLATE, {}, tmp_path / "sandbox", tmp_path, {}, "test")
    sockets = [tmp_path / "engine.sock", tmp_path / "engine-1.sock"]
    spec = pod_spec("openforge-test", plan, TEMPLATE, {}, PodmanOptions(image="local:1"), sockets)
    _, proxy = spec["spec"]["containers"]
    volumes = {v["name"]: v["hostPath"]["path"] for v in spec["spec"]["volumes"] if v["hostPath"]["type"] == "Socket"}
    mounted = {m["mountPath"]: volumes[m["name"]] for m in proxy["volumeMounts"] if m["name"] in volumes}
    assert mounted == {CHANNEL_PATH: str(sockets[0]), "/run/openforge/engine-1.sock": str(sockets[1])}
    assert {"name": UPSTREAM_SOCKET_ENV, "value": f"{CHANNEL_PATH},/run/openforge/engine-1.sock"} in proxy["env"]


def test_pod_uses_the_local_image_with_the_checkout_mounted_read_only(tmp_path: Path) -> None:
    spec, _ = _spec(tmp_path)
    for container in spec["spec"]["containers"]:
        assert container["image"] == "local:1"
        checkout = [m for m in container["volumeMounts"] if m["name"] == "openforge-checkout"]
        assert checkout and checkout[0]["readOnly"] is True
        assert any(e["name"] == "PYTHONPATH" for e in container["env"])


def test_only_the_named_non_daemon_templates_run_under_podman() -> None:
    options = PodmanOptions()
    assert options.runs(TEMPLATE)
    assert not options.runs({**TEMPLATE, "name": "score"})
    assert not options.runs({**TEMPLATE, "daemon": True})


def test_a_machine_without_podman_is_told_what_to_run() -> None:
    problem = podman_problem(PodmanOptions(podman="no-such-podman"))
    assert problem is not None and "make podman-base" in problem


def test_installed_harnesses_are_mounted_where_the_rollout_step_looks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "harnesses"
    home.mkdir()
    monkeypatch.setenv("OPENFORGE_HARNESS_HOME", str(home))
    spec, _ = _spec(tmp_path, local_podman_options())  # what `openforge run --runtime podman` hands the executor
    main = spec["spec"]["containers"][0]
    assert {"name": "OPENFORGE_HARNESS_HOME", "value": str(home)} in main["env"]
    assert {"name": "openforge-harnesses", "mountPath": str(home), "readOnly": True} in main["volumeMounts"]


def _with_teacher_key() -> dict:
    key = {"name": "OPENFORGE_UPSTREAM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "keys", "key": "PODSPEC_TEACHER_KEY"}}}
    proxy = {**TEMPLATE["sidecars"][0], "env": [key]}
    return {**TEMPLATE, "sidecars": [proxy]}


def test_a_secret_goes_to_the_container_that_asks_for_it_from_the_variable_of_its_keys_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.executor._templating import ManifestError

    template = _with_teacher_key()
    with pytest.raises(ManifestError, match="key 'PODSPEC_TEACHER_KEY' of Secret 'keys'.*export it"):
        plan_pod(template, {}, tmp_path / "a", tmp_path, {}, "test")
    monkeypatch.setenv("PODSPEC_TEACHER_KEY", "sk-local")
    plan = plan_pod(template, {}, tmp_path / "b", tmp_path, {}, "test")
    (proxy,) = plan.sidecars
    assert proxy.env["OPENFORGE_UPSTREAM_API_KEY"] == "sk-local"
    assert "OPENFORGE_UPSTREAM_API_KEY" not in plan.main.env and "sk-local" not in str(plan.main)
    # podman would write it into a pod spec on disk: refused, naming the runtime that can.
    with pytest.raises(ManifestError, match="use --runtime sandbox"):
        pod_spec("openforge-test", plan, template, {}, PodmanOptions(image="local:1"))


def _flaky_podman(tmp_path: Path, failures: int) -> Path:
    """A podman whose `pod rm` fails `failures` times as a busy one does: a real lock timeout
    cannot be made on demand, so this stands in for podman in the cleanup tests alone."""
    script = tmp_path / "podman"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1 $2" = "pod rm" ]; then\n'
        f'  n=$(cat {tmp_path}/rm-tries 2>/dev/null || echo 0); echo $((n + 1)) > {tmp_path}/rm-tries\n'
        f'  if [ "$n" -lt {failures} ]; then echo "Error: acquiring lock: timed out" >&2; exit 125; fi\n'
        "fi\n"
        'if [ "$1" = logs ]; then echo "log of $2"; fi\n'
    )
    script.chmod(0o755)
    return script


def _stopped_pod(tmp_path: Path, failures: int, monkeypatch: pytest.MonkeyPatch) -> PodmanPod:
    monkeypatch.setattr(_podman, "_REMOVE_BACKOFF_S", 0.01)
    options = PodmanOptions(podman=str(_flaky_podman(tmp_path, failures)))
    pod = PodmanPod("openforge-test", ["main", "proxy"], tmp_path / "logs", options, stop_timeout_s=1)
    pod.stop()
    return pod


def test_a_busy_podman_is_asked_again_to_remove_the_pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pod = _stopped_pod(tmp_path, 2, monkeypatch)
    assert (tmp_path / "rm-tries").read_text().strip() == "3"
    assert not (pod.log_dir / "removal.log").exists()
    assert (pod.log_dir / "main.log").read_text() == "log of openforge-test-main\n"


def test_a_pod_that_will_not_go_is_reported_with_the_command_that_removes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pod = _stopped_pod(tmp_path, 100, monkeypatch)
    note = (pod.log_dir / "removal.log").read_text()
    assert "openforge-test was not removed (Error: acquiring lock: timed out)" in note
    assert "podman pod rm -f openforge-test" in note
    assert note.strip() in capsys.readouterr().err
    assert (pod.log_dir / "proxy.log").read_text() == "log of openforge-test-proxy\n"  # the rollout's logs are kept
