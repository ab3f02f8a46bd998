"""Engine replicas in a real local iteration: the quickstart with ``engine.replicas: 2`` on the
dev engine, its rollouts sandboxed where namespaces can be made. Each rollout's proxy reaches
both engines through its pod's channel (one socket each) and pins its session to one of them:
the engines' logs show every session on one engine only, and sessions on both. (A replica
that dies: tests/components/proxy/test_replicas.py.)"""

from __future__ import annotations

import io
import re
from collections import defaultdict
from pathlib import Path

import pytest
from rich.console import Console

from components.core.storage import RunLayout, open_store
from components.proxy.upstream import REPLICA_TAG, pinned_replica
from pipelines.executor import sandbox_problem
from tests.e2e._quickstart import local_quickstart

RUNTIME = "process" if sandbox_problem() else "sandbox"
_SESSION_LINE = re.compile(r"POST /v1/chat/completions for session (\S+)")


@pytest.mark.slow
@pytest.mark.timeout(900)  # one local iteration with two engines and training: ~2 min idle
def test_each_session_reaches_one_replica_and_sessions_use_both(tmp_path: Path) -> None:
    from components.core import read_session
    from pipelines.run import run_experiment

    config = local_quickstart(tmp_path, iterations=1)
    config.engine.replicas = 2

    metrics = run_experiment(config, console=Console(file=io.StringIO()), workdir=tmp_path / ".openforge", runtime=RUNTIME)

    sessions_on: dict[str, set[int]] = defaultdict(set)
    logs = sorted((tmp_path / ".openforge").rglob("generate.serve-*/main.log"))
    assert [log.parent.name for log in logs] == ["generate.serve-0", "generate.serve-1"]
    for replica, log in enumerate(logs):
        for session in _SESSION_LINE.findall(log.read_text()):
            sessions_on[session].add(replica)
    store, layout = open_store(config.storage.uri), RunLayout(config.name)
    rollouts = [k.rsplit("/", 1)[1].removesuffix(".json") for k in store.list(layout.outcomes(0))]
    assert len(rollouts) == 16 and set(sessions_on) == set(rollouts)
    for session, replicas in sessions_on.items():
        assert replicas == {pinned_replica(session, 2)}, f"{session} reached engines {replicas}"
    assert {r for replicas in sessions_on.values() for r in replicas} == {0, 1}, "every session on one engine"
    # Each recorded call names the replica that answered it.
    for session in rollouts:
        trajectory = tmp_path / "call.jsonl"
        trajectory.write_bytes(store.get_bytes(layout.trajectory(0, session)))
        assert {call.tags[REPLICA_TAG] for call in read_session(trajectory)} == {pinned_replica(session, 2)}
    assert metrics[0]["batch/trained_tokens"] > 0
