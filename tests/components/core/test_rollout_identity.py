"""A rollout's names: made and parsed in one module, agreed on by every step, spelled nowhere else."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from aiohttp.test_utils import make_mocked_request

from components.core.config import ExperimentConfig
from components.core.rollout_identity import (
    ATTEMPT_ROUTE,
    SESSION_ROUTE,
    flush_url,
    group_id,
    make_rollout_id,
    outcome_key_file,
    parse_rollout_id,
    route_parts,
    session_route,
    trajectory_file,
    trajectory_session,
)
from components.core.storage import RunLayout
from components.proxy.app import build_app
from components.proxy.config import ProxyConfig
from components.proxy.recorder import Recorder
from components.rollout.prepare import fan_out, plan_rollouts
from components.rollout.tasks import load_task

ROOT = Path(__file__).resolve().parents[3]
IDENTITY_MODULE = ROOT / "components" / "core" / "rollout_identity.py"
WRITE_HELLO = ROOT / "examples" / "tasks" / "quickstart" / "write-hello"


@pytest.mark.parametrize(
    ("task_id", "sample"), [("write-hello", 0), ("a", 12), ("fix-s3-bug", 2), ("t-s1", 1), ("x1-s", 7)]
)
def test_rollout_id_round_trips(task_id: str, sample: int) -> None:
    assert parse_rollout_id(make_rollout_id(task_id, sample)) == (task_id, sample)


def test_rollout_id_format_is_task_then_sample() -> None:
    assert make_rollout_id("write-hello", 0) == "write-hello-s0"
    # A task whose own name looks like a sample suffix keeps it.
    assert parse_rollout_id("fix-s3-bug-s2") == ("fix-s3-bug", 2)


@pytest.mark.parametrize("bad", ["write-hello", "write-hello-s", "write-hello-sx", "-s0", "Write-s0", "a_b-s0", "a-s0 ", ""])
def test_malformed_rollout_ids_are_refused_naming_the_form(bad: str) -> None:
    with pytest.raises(ValueError, match=r"is not <task_id>-s<sample_index> \(e\.g\. write-hello-s0\)"):
        parse_rollout_id(bad)


def test_group_id_is_iteration_and_task() -> None:
    assert group_id(4, "write-hello") == "it4-write-hello"


def test_file_names() -> None:
    assert trajectory_file("write-hello-s0") == "write-hello-s0.jsonl"
    assert trajectory_session("write-hello-s0.jsonl") == "write-hello-s0"
    assert trajectory_session(trajectory_file("v1.2-x")) == "v1.2-x"  # a dot in a session id stays
    assert outcome_key_file("write-hello-s0") == "write-hello-s0.json"


def test_session_route_and_flush_url() -> None:
    assert session_route("http://p:8100", "write-hello-s0") == "http://p:8100/s/write-hello-s0"
    assert session_route("http://p:8100", "write-hello-s0", 3) == "http://p:8100/s/write-hello-s0/a/3"
    assert flush_url("http://p:8100", "write-hello-s0") == "http://p:8100/flush?session=write-hello-s0"
    assert route_parts({}) == (None, None)


@pytest.mark.parametrize("attempt", [0, 1, 42])
@pytest.mark.parametrize("tail", ["/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/models"])
def test_the_runners_route_resolves_in_the_proxy_to_its_session(attempt: int, tail: str, tmp_path: Path) -> None:
    # What the runner hands the harness, matched by the proxy's real router (no server).
    app = build_app(ProxyConfig(upstream="http://127.0.0.1:9", out=tmp_path))
    path = session_route("", "fix-s3-bug-s2", attempt) + tail
    method = "GET" if tail.endswith("/models") else "POST"

    match = asyncio.run(app.router.resolve(make_mocked_request(method, path, app=app)))

    assert match.http_exception is None, path
    assert route_parts(match) == ("fix-s3-bug-s2", str(attempt) if attempt else None)


def test_prepare_runner_proxy_and_store_agree_on_one_rollout(tmp_path: Path) -> None:
    config = ExperimentConfig.model_validate(
        {"name": "identity-test", "tasks": {"source": "unused"}, "rollout": {"samples_per_task": 2}}
    )
    task = load_task(WRITE_HELLO)
    plan = plan_rollouts(config, [task], iteration=3)
    listed, given = plan[1], fan_out({"rollouts": plan})[1]["rollout_id"]
    assert given == listed["rollout_id"]

    # The runner reads the task and sample back from what the rollout pod is given.
    assert parse_rollout_id(given) == (task.id, listed["sample_index"]) == ("write-hello", 1)
    assert listed["group_id"] == group_id(3, task.id)
    # The proxy names the session's file after the id; reading the folder gives the id back.
    written = Recorder(tmp_path / "proxy-out").path(given)
    assert written.name == trajectory_file(given) and trajectory_session(written.name) == given
    # The store keeps it, and the outcome, under the same id.
    layout = RunLayout(config.name)
    assert layout.trajectory(3, given) == f"{config.name}/iterations/3/trajectories/{written.name}"
    assert layout.outcome(3, given).rsplit("/", 1)[1] == outcome_key_file(given)


# How each name would look if spelled again outside the module: a format string or a literal
# that makes one (prose in docstrings and help, such as ``<rollout_id>.jsonl``, is fine).
_SPELLINGS = {
    "rollout id": re.compile(r"-s\{|-s\(\?P<"),
    "group id": re.compile(r"\bit\{"),
    "trajectory file name": re.compile(r"[}*\"']\.jsonl"),
    "outcome file name": re.compile(r"[\"']outcome\.json|\}/outcome\.json|\{rollout_id\}\.json\b"),
    "session route": re.compile(r"/s/[{\"']"),
    "flush query": re.compile(r"/flush\?\S*=\{|query\.get\([\"']session[\"']"),
}
# One line per name, as someone might add it (each a line this repository once had).
_RESPELLED = [
    'rid = f"{task_id}-s{sample}"',
    r'_ROLLOUT_ID = re.compile(r"^(?P<task_id>[a-z0-9][a-z0-9-]*)-s(?P<sample>\d+)$")',
    'group = f"it{iteration}-{task_id}"',
    'path = out / f"{session_id}.jsonl"',
    'files = out.glob("*.jsonl")',
    'out = f"{OUT_DIR}/outcome.json"',
    'route = f"{proxy_url}/s/{rollout_id}"',
    'app.router.add_post("/s/{session_id}" + path, handler)',
    'url = f"{proxy_url}/flush?session={session_id}"',
    'session = request.query.get("session")',
]


def _spellings(path: Path) -> list[tuple[int, str]]:
    """``(line number, name)`` for every spelling of a name in one file."""
    lines = enumerate(path.read_text().splitlines(), start=1)
    return [(lineno, what) for lineno, line in lines for what, rule in _SPELLINGS.items() if rule.search(line)]


def test_the_names_are_spelled_only_in_the_identity_module() -> None:
    sources = [path for root in ("components", "pipelines") for path in sorted((ROOT / root).rglob("*.py"))]
    found = [
        f"{path.relative_to(ROOT)}:{lineno}: {what} (use components/core/rollout_identity.py)"
        for path in sources
        if path != IDENTITY_MODULE
        for lineno, what in _spellings(path)
    ]
    assert found == []


def test_the_spelling_check_catches_each_name_spelled_again(tmp_path: Path) -> None:
    # The check above passes on an empty list; this shows it would not stay empty.
    again = tmp_path / "again.py"
    again.write_text("\n".join(_RESPELLED) + '\n"""Prose is fine: writes <rollout_id>.jsonl."""\n')

    assert [lineno for lineno, _ in _spellings(again)] == list(range(1, len(_RESPELLED) + 1))
    # And the module spells every name, so each rule matches the real spelling.
    assert {what for _, what in _spellings(IDENTITY_MODULE)} == set(_SPELLINGS)
