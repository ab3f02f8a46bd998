"""A rollout's identity and every name derived from it, spelled once.

A rollout is ``<task_id>-s<sample_index>`` (e.g. ``write-hello-s0``). The same string is
its id in the plan and the fan-out, its session in the recording proxy (the route
``/s/<rollout_id>[/a/<attempt>]`` names it, and the proxy's session file is named after
it), and its file names in the run's store; its GRPO group is ``it<iteration>-<task_id>``.
Each of those names is made here and parsed here, so the prepare step, the runner, the
proxy, scoring and the trainer cannot disagree about them (tests/components/core/
test_rollout_identity.py holds the contract and checks no other module spells them).

Stdlib only: the runner, the proxy and the CLI import this at start-up.
"""

from __future__ import annotations

import re
from typing import Mapping

__all__ = [
    "ATTEMPT_ROUTE",
    "IMAGES_DIR",
    "OUTCOME_FILE",
    "ROLLOUT_ID_FORM",
    "SESSION_HEADER",
    "SESSION_QUERY",
    "SESSION_ROUTE",
    "TRAJECTORY_GLOB",
    "flush_url",
    "group_id",
    "make_rollout_id",
    "outcome_key_file",
    "parse_rollout_id",
    "route_parts",
    "session_route",
    "trajectory_file",
    "trajectory_session",
]

ROLLOUT_ID_FORM = "<task_id>-s<sample_index>"
# Greedy on the task id, so a task named like ``fix-s3-bug`` keeps its own ``-s3``.
_ROLLOUT_ID = re.compile(r"^(?P<task_id>[a-z0-9][a-z0-9-]*)-s(?P<sample>\d+)$")

# What the runner writes in its out folder (the manifest's ``outcome`` artifact reads it).
OUTCOME_FILE = "outcome.json"

_TRAJECTORY_SUFFIX = ".jsonl"
TRAJECTORY_GLOB = f"*{_TRAJECTORY_SUFFIX}"
# The images a rollout's records refer to, in a folder beside its session file (in the pod
# and in the store alike, so a record's ``images/<sha256>.<ext>`` resolves in both).
IMAGES_DIR = "images"

# aiohttp route templates, which are also ``str.format`` templates: the proxy registers
# them and the runner fills them in, so what one builds the other matches.
_SESSION_PARAM, _ATTEMPT_PARAM = "session_id", "attempt"
SESSION_ROUTE = f"/s/{{{_SESSION_PARAM}}}"
ATTEMPT_ROUTE = f"{SESSION_ROUTE}/a/{{{_ATTEMPT_PARAM}}}"
# ``POST /flush?session=<id>``: the one session whose file the proxy should sync.
SESSION_QUERY = "session"
# The header the proxy sends the engine with each call: the engine's log (and a router in
# front of engine replicas) sees which session the call belongs to.
SESSION_HEADER = "X-Session-ID"


def make_rollout_id(task_id: str, sample_index: int) -> str:
    return f"{task_id}-s{sample_index}"


def parse_rollout_id(rollout_id: str) -> tuple[str, int]:
    """``(task_id, sample_index)`` from ``<task_id>-s<sample_index>``; ValueError naming that form otherwise."""
    match = _ROLLOUT_ID.match(rollout_id)
    if match is None:
        raise ValueError(f"rollout id {rollout_id!r} is not {ROLLOUT_ID_FORM} (e.g. write-hello-s0)")
    return match["task_id"], int(match["sample"])


def group_id(iteration: int, task_id: str) -> str:
    """The GRPO group: the rollouts of one task in one iteration, compared with each other (the batch's uid)."""
    return f"it{iteration}-{task_id}"


def trajectory_file(session_id: str) -> str:
    """The name of a session's trajectory file: the proxy's, the pod's artifact's and the store's."""
    return f"{session_id}{_TRAJECTORY_SUFFIX}"


def trajectory_session(file_name: str) -> str:
    """The session a trajectory file holds (the inverse of ``trajectory_file``)."""
    return file_name.removesuffix(_TRAJECTORY_SUFFIX)


def outcome_key_file(rollout_id: str) -> str:
    """The name of a rollout's outcome in the store (one folder holds every rollout's)."""
    return f"{rollout_id}.json"


def session_route(proxy_url: str, session_id: str, attempt: int = 0) -> str:
    """The proxy URL prefix whose calls the proxy records in ``session_id``'s file (attempt 0 has no ``/a/``)."""
    template = ATTEMPT_ROUTE if attempt else SESSION_ROUTE
    return proxy_url + template.format(**{_SESSION_PARAM: session_id, _ATTEMPT_PARAM: attempt})


def route_parts(match_info: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The session id and attempt, unchecked, that a request's route matched; None for what it lacks."""
    return match_info.get(_SESSION_PARAM), match_info.get(_ATTEMPT_PARAM)


def flush_url(proxy_url: str, session_id: str) -> str:
    return f"{proxy_url}/flush?{SESSION_QUERY}={session_id}"
