"""Engine replicas in a real local iteration: the quickstart with ``engine.replicas: 2`` on the
dev engine, its rollouts sandboxed where namespaces can be made. Each rollout's proxy reaches
both engines through its pod's channel (one socket each) and pins its session to one of them,
and sessions use both. A replica killed mid-iteration costs its sessions one resent call each,
not their rollouts. One run shows both: until the kill every call reaches its session's
pinned replica (a run without the kill would show that alone, for another ~3 CI minutes)."""

from __future__ import annotations

import io
import re
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from rich.console import Console

from components.core.storage import RunLayout, open_store
from components.proxy.upstream import REPLICA_TAG, pinned_replica
from pipelines.executor import WorkflowFailed, _pod_node, sandbox_problem
from tests.e2e._quickstart import local_quickstart

RUNTIME = "process" if sandbox_problem() else "sandbox"
_SESSION_LINE = re.compile(r"POST /v1/chat/completions for session (\S+)")


@pytest.mark.slow
@pytest.mark.timeout(900)  # one local iteration, run twice (the second resumes it): ~3 min idle
def test_a_replica_killed_mid_iteration_costs_its_sessions_a_resent_call_not_the_rollout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components.core import read_session
    from components.core.outcome import Outcome, RolloutStatus
    from pipelines.run import run_experiment

    config = local_quickstart(tmp_path, iterations=1)
    config.engine.replicas = 2
    daemons = {}
    start = _pod_node.start_pod

    def spy(plan, logs, registry):  # type: ignore[no-untyped-def]
        pod = start(plan, logs, registry)
        daemons[logs.name] = (pod, logs / "main.log")
        return pod

    monkeypatch.setattr(_pod_node, "start_pod", spy)
    killed = threading.Event()

    def kill_replica_1_after_its_third_call() -> None:
        end = time.monotonic() + 600
        while time.monotonic() < end and not killed.is_set():
            pod, log = daemons.get("generate.serve-1", (None, None))
            if pod is not None and log.exists() and len(_SESSION_LINE.findall(log.read_text())) >= 3:
                pod.main.process.kill()
                killed.set()
                return
            time.sleep(0.05)

    threading.Thread(target=kill_replica_1_after_its_third_call, daemon=True).start()
    console = Console(file=io.StringIO())
    with pytest.raises(WorkflowFailed, match="serve-1: daemon exited"):
        run_experiment(config, console=console, workdir=tmp_path / ".openforge", runtime=RUNTIME)
    assert killed.is_set()

    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    outcomes = [Outcome.model_validate_json(store.get_bytes(k)) for k in store.list(layout.outcomes(0))]
    assert len(outcomes) == 16 and all(o.status is RolloutStatus.OK for o in outcomes), [(o.rollout_id, o.status) for o in outcomes]
    resent = []
    for outcome in outcomes:
        trajectory = tmp_path / "call.jsonl"
        trajectory.write_bytes(store.get_bytes(layout.trajectory(0, outcome.rollout_id)))
        calls = read_session(trajectory)
        resent += [c for c in calls if c.tags.get("upstream_attempts", 1) > 1]
        if pinned_replica(outcome.rollout_id, 2) == 0:
            assert {c.tags[REPLICA_TAG] for c in calls} == {0}, "a session of the live replica moved"
        else:  # its pinned replica until the kill, then the live one from the resent call on
            replicas = [c.tags[REPLICA_TAG] for c in calls]
            moved = replicas.index(0) if 0 in replicas else len(replicas)
            assert replicas == [1] * moved + [0] * (len(replicas) - moved), f"{outcome.rollout_id}: {replicas}"
            assert moved == len(calls) or calls[moved].tags.get("upstream_attempts") == 2
    # The engines' own logs: each saw only its sessions (replica 0 also those resent to it), and
    # both saw some.
    logs = sorted((tmp_path / ".openforge").rglob("generate.serve-*/main.log"))
    assert [log.parent.name for log in logs] == ["generate.serve-0", "generate.serve-1"]
    seen = [set(_SESSION_LINE.findall(log.read_text())) for log in logs]
    assert seen[0] and seen[1], "every session on one engine"
    assert all(pinned_replica(session, 2) == 1 for session in seen[1])
    resent_sessions = {c.session_id for c in resent}
    assert all(pinned_replica(session, 2) == 0 or session in resent_sessions for session in seen[0])
    # The sessions pinned to the killed replica that called it afterwards each resent one call, to replica 0.
    assert resent and all(c.tags["upstream_attempts"] == 2 and c.tags[REPLICA_TAG] == 0 for c in resent)
    assert len({c.session_id for c in resent}) == len(resent), "a session resent more than one call"

    # The daemon's failure failed the iteration after its rollouts ended; a rerun resumes it at
    # score and trains on them, running none of them again.
    before = {k: store.get_bytes(k) for k in store.list(layout.outcomes(0))}
    metrics = run_experiment(config, console=console, workdir=tmp_path / ".openforge", runtime=RUNTIME)
    assert metrics[0]["batch/trained_tokens"] > 0
    assert {k: store.get_bytes(k) for k in store.list(layout.outcomes(0))} == before
