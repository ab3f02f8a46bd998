"""Tasks: a folder with ``task.yaml`` (prompt, workspace files, verifier, time limit).

A web task also holds ``web.yaml`` (the seeded app, or the folder of static pages, to start
before the harness, docs/environments.md); the loader validates it with the rest and puts
it in ``Task.web``.
A desktop task holds ``desktop.yaml`` (the screen and the apps open on it), in ``Task.desktop``.

A task set is a folder of task folders, on disk or under an ``s3://`` prefix. Loading
validates every task up front, so a broken task set fails in the prepare step with a
message naming the file, the field and the fix, not halfway through an iteration.
"""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path
from typing import NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from components.core.choices import CandidateTurns, TaskChoices, check_candidate_turns
from components.core.scripted_turns import ScriptedTurn
from components.core.storage import ArtifactStore, open_store
from components.core.validation import describe_errors
from components.environments.desktop_tasks import DESKTOP_FILE, DesktopTaskError, DesktopTaskSpec, load_desktop_spec
from components.environments.web_tasks import WEB_FILE, WebSpec, WebTaskError, load_web_spec
from components.environments.webapps.goal import URL_PLACEHOLDER

TASK_FILE = "task.yaml"
TASK_ID_RULE = "lower-case letters, digits and '-', starting with a letter or digit, at most 48 characters"
_TASK_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,47}$")
# Placeholders the verifier command may use; replaced literally (JSON braces stay intact).
VERIFIER_PLACEHOLDERS = ("{task_dir}", "{workspace}")

_FIELD_FIXES = {
    "id": f"set id: to the task folder's name ({TASK_ID_RULE})",
    "prompt": 'set prompt: "what the agent must do"',
    "verifier": 'add verifier: {command: ["python3", "{task_dir}/verify.py"], timeout_s: 30}',
    "verifier.command": 'set verifier.command to a non-empty list, e.g. ["python3", "{task_dir}/verify.py"]',
    "verifier.timeout_s": "set verifier.timeout_s to a positive number of seconds",
    "time_limit_s": "set time_limit_s to a positive number of seconds, or remove it to use rollout.time_limit_s",
    "workspace": "set workspace: to a folder inside the task folder, or remove it for an empty workspace",
    "reference": 'give reference: as a list of turns ([{tool_calls: [{shell: "..."}]}, {content: "Done."}]; docs/tasks.md)',
    "choices": "give choices: as a list of turns, each a list of candidate turns "
    '([[{tool_calls: [{shell: "..."}]}, ...], [{content: "..."}]]; docs/tasks.md)',
}


class TaskError(ValueError):
    """A task or task set that cannot be used; the message names the file, the field and the fix."""


class VerifierSpec(BaseModel):
    """How to judge a rollout: a command run in the workspace after the harness ends."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] = Field(
        min_length=1,
        description="argv; {task_dir} and {workspace} are replaced. Exit 0 = passed, 1 = failed, "
        "else verifier_error. A last stdout line of JSON with 'reward' sets a dense reward.",
    )
    timeout_s: float = Field(30.0, gt=0, description="Wall-clock limit of the verifier.")


class Task(BaseModel):
    """One task as written in ``task.yaml``, plus the folder it was loaded from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description=f"Task id ({TASK_ID_RULE}); equals the folder name.")
    prompt: str = Field(min_length=1, description="What the agent is asked to do.")
    time_limit_s: float | None = Field(None, gt=0, description="Overrides config rollout.time_limit_s.")
    workspace: str | None = Field(None, description="Folder inside the task folder copied into a fresh workspace.")
    verifier: VerifierSpec
    choices: CandidateTurns | None = Field(
        None,
        description="Candidate turns per assistant turn for the dev engine's choice mode (engine.dev_mode: choice); "
        "a turn with one candidate is forced. Other engines ignore them.",
    )
    reference: list[ScriptedTurn] | None = Field(
        None,
        min_length=1,
        description="A right solution, turn by turn, that `openforge record`'s reference teacher plays "
        "(teacher.kind: reference); the turn's other candidates in `choices` are its errors.",
    )
    task_dir: Path = Field(exclude=True, description="Where the task was loaded from (set by the loader).")
    web: WebSpec | None = Field(None, exclude=True, description=f"The folder's {WEB_FILE} (set by the loader).")
    desktop: DesktopTaskSpec | None = Field(
        None, exclude=True, description=f"The folder's {DESKTOP_FILE} (set by the loader)."
    )

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not _TASK_ID.match(value):
            raise ValueError(f"task id {value!r} is not allowed: use {TASK_ID_RULE}")
        return value

    @field_validator("reference")
    @classmethod
    def _playable_reference(cls, value: list[ScriptedTurn] | None) -> list[ScriptedTurn] | None:
        if value is not None:
            check_candidate_turns([[turn] for turn in value])  # its tokens must be known, as a candidate's
        return value

    @field_validator("choices")
    @classmethod
    def _scorable_choices(cls, value: CandidateTurns | None) -> CandidateTurns | None:
        return None if value is None else check_candidate_turns(value)

    def choice_entry(self) -> TaskChoices | None:
        """This task's entry in an iteration's choice book; found by its prompt in the conversation.

        A web task's prompt reaches the harness with ``{web_url}`` replaced by a URL whose port
        differs on every rollout: its longest literal part is what the conversation holds.
        """
        if self.choices is None:
            return None
        return TaskChoices(task_id=self.id, match=self._match_text(), turns=self.choices)

    def reference_entry(self) -> TaskChoices | None:
        """This task's entry in a reference teacher's book: per turn the reference first, then
        the turn's other candidates (its possible errors); None without a ``reference``."""
        if self.reference is None:
            return None
        offered = self.choices or []
        turns = [
            [turn, *(c for c in (offered[index] if index < len(offered) else []) if c != turn)]
            for index, turn in enumerate(self.reference)
        ]
        return TaskChoices(task_id=self.id, match=self._match_text(), turns=turns)

    def _match_text(self) -> str:
        return max(self.prompt.split(URL_PLACEHOLDER), key=len).strip()

    @property
    def workspace_dir(self) -> Path | None:
        return None if self.workspace is None else self.task_dir / self.workspace

    def verifier_argv(self, workspace: Path) -> list[str]:
        """The verifier command with its placeholders filled in."""
        values = {"{task_dir}": str(self.task_dir), "{workspace}": str(workspace)}
        argv = []
        for arg in self.verifier.command:
            for placeholder, value in values.items():
                arg = arg.replace(placeholder, value)
            argv.append(arg)
        return argv


def load_task(task_dir: str | Path, *, match_folder_name: bool = True) -> Task:
    """Read and validate ``task_dir/task.yaml``; raise TaskError naming file, field and fix.

    In a task set the folder name is the task id; a copy of one task (a rollout's input
    artifact) may sit in a folder of any name, hence ``match_folder_name=False``.
    """
    task_dir = Path(task_dir).resolve()
    path = task_dir / TASK_FILE
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise TaskError(f"{path}: no task file; every task folder needs a {TASK_FILE}") from None
    except yaml.YAMLError as exc:
        raise TaskError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise TaskError(f"{path}: the top level must be a mapping (id, prompt, verifier, ...)")
    if "web" in raw:
        raise TaskError(f"{path}: web: belongs in {task_dir / WEB_FILE} ({{app, seed, goal}}), not in {TASK_FILE}")
    if "desktop" in raw:
        raise TaskError(f"{path}: desktop: belongs in {task_dir / DESKTOP_FILE} ({{apps, ...}}), not in {TASK_FILE}")
    try:
        web, desktop = load_web_spec(task_dir), load_desktop_spec(task_dir)
    except (WebTaskError, DesktopTaskError) as exc:
        raise TaskError(str(exc)) from None
    try:
        task = Task.model_validate({**raw, "task_dir": task_dir, "web": web, "desktop": desktop})
    except ValidationError as exc:
        raise TaskError(_format_errors(path, exc)) from None
    if match_folder_name and task.id != task_dir.name:
        raise TaskError(f"{path}: id {task.id!r} differs from the folder name {task_dir.name!r}; make them equal")
    _check_workspace(path, task)
    return task


def _check_workspace(path: Path, task: Task) -> None:
    if task.workspace_dir is None:
        return
    workspace = task.workspace_dir.resolve()
    if not workspace.is_relative_to(task.task_dir):
        raise TaskError(f"{path}: workspace {task.workspace!r} leaves the task folder; {_FIELD_FIXES['workspace']}")
    if not workspace.is_dir():
        raise TaskError(f"{path}: workspace folder {workspace} does not exist; create it or remove the workspace field")


def _format_errors(path: Path, exc: ValidationError) -> str:
    lines = [f"{path}: invalid task"]
    for field, msg in describe_errors(exc, "misspelled? fields: id, prompt, time_limit_s, workspace, verifier"):
        fix = _FIELD_FIXES.get(field)
        lines.append(f"  {field}: {msg}" + (f"; {fix}" if fix else ""))
    return "\n".join(lines)


def load_task_set(
    source: str | Path, store: ArtifactStore | None = None, cache_dir: Path | None = None
) -> list[Task]:
    """Every task of a task set, sorted by id.

    ``source`` is a folder (a path or ``file://`` URI) or an ``s3://`` prefix. An S3 task set
    is downloaded into ``cache_dir`` (a new temp folder when unset; the caller removes it)
    through ``store``, a store rooted at the prefix (default: ``open_store(source)``).
    """
    text = str(source)
    if text.startswith("s3://") or store is not None:
        root = _download_task_set(store or open_store(text), cache_dir)
    else:
        root = Path(text.removeprefix("file://"))
    if not root.is_dir():
        raise TaskError(f"task set {text}: no such folder; set tasks.source to a folder of task folders")
    task_dirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    tasks = [load_task(d) for d in task_dirs]
    if not tasks:
        raise TaskError(f"task set {text}: no task folders found; each task is a folder with a {TASK_FILE}")
    return tasks


def _download_task_set(store: ArtifactStore, cache_dir: Path | None) -> Path:
    root = Path(cache_dir) if cache_dir is not None else Path(tempfile.mkdtemp(prefix="openforge-tasks-"))
    keys = store.list("")
    if not keys:
        raise TaskError(f"task set {store.root}: no objects under this prefix; upload the task folders there")
    for key in keys:
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(store.get_bytes(key))
    return root


class TaskSlice(NamedTuple):
    """The tasks one iteration takes, and where the run's task cursor stands after them."""

    tasks: list[Task]
    next_cursor: int


def _epoch_order(count: int, seed: int, epoch: int) -> list[int]:
    # A string seed: random.Random hashes it with SHA-512, stable across runs and machines.
    return random.Random(f"openforge-tasks:{seed}:{epoch}").sample(range(count), count)


def select_tasks(tasks: list[Task], count: int | None, seed: int, cursor: int) -> TaskSlice:
    """The ``count`` tasks (all when None) at position ``cursor`` of the run's task stream.

    The stream visits every task once per epoch, each epoch in its own seeded order, so a
    run sees the whole set before it repeats a task; the cursor counts positions consumed
    and lives in the run's state, so the same state always gives the same slice.
    """
    total = len(tasks)
    if count is None or count >= total:
        return TaskSlice(list(tasks), cursor + total)
    chosen: dict[str, Task] = {}
    position, orders = cursor, {}  # epoch -> its order
    while len(chosen) < count:
        epoch, index = divmod(position, total)
        if epoch not in orders:
            orders[epoch] = _epoch_order(total, seed, epoch)
        task = tasks[orders[epoch][index]]
        # An epoch's last tasks and the next one's first may coincide: take each once per slice.
        chosen.setdefault(task.id, task)
        position += 1
    return TaskSlice(sorted(chosen.values(), key=lambda task: task.id), position)
