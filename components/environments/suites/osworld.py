"""OSWorld task JSON as OpenForge desktop tasks: ``openforge tasks osworld SOURCE OUT``.

An OSWorld task (Xie et al., 2024) is one JSON file: ``instruction``, ``config`` (the
set-up steps run in the VM before the agent starts) and ``evaluator``. SOURCE is one such
file or a folder of them (OSWorld's ``evaluation_examples/examples``, read recursively).
What runs on this machine's local X desktop (osworld_vm.py says how the VM maps here):

| config step | becomes |
|---|---|
| ``download`` of a local file (a path beside the task JSON, or ``file://``) | a workspace file at the VM path's place |
| ``execute`` / ``command`` | a desktop.yaml set-up command (``wait_exit: true``), in order |
| ``launch`` | a desktop.yaml app, in order |
| ``activate_window`` | the window the app launched before it must show before the agent starts (exact title) |
| ``sleep`` | a set-up command ``sleep N`` |

Any other step (``open``, Chrome's tabs and history, Google Drive, logins) is refused
with the reason, as is a download from the network. ``snapshot`` (the VM image to restore)
cannot be: every task starts on a fresh display with only the apps it launches. The
evaluator becomes ``goal.json`` for ``osworld_verify.py`` (osworld_eval.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from components.environments.desktop_tasks import DESKTOP_FILE
from components.environments.suites.common import SuiteError, TaskFolder, dump_yaml, local_file, parse, read_json, task_id
from components.environments.suites.osworld_eval import evaluator_goal
from components.environments.suites.osworld_vm import local_argv, local_instruction, workspace_path
from components.environments.web_tasks import GOAL_FILE, TIME_LIMIT_S

PREFIX = "osworld"
SCREEN = {"width": 1920, "height": 1080}  # OSWorld's VM screen
START_TIMEOUT_S = 20.0  # desktop.yaml's default: how long each entry may take; a long sleep raises it
WORKSPACE = "workspace"
_VERIFIER = Path(__file__).with_name("osworld_verify.py")
SUPPORTED_STEPS = ("download", "execute", "command", "launch", "activate_window", "sleep")
_WHY = {
    "open": "it opens a file with the VM's default application; launch the program with the file instead",
    "chrome_open_tabs": "it drives Google Chrome in the VM over its debugging port",
    "chrome_close_tabs": "it drives Google Chrome in the VM over its debugging port",
    "update_browse_history": "it writes Chrome's history database in the VM",
    "googledrive": "it needs a Google Drive account",
    "login": "it needs an online account",
}


class OSWorldTask(BaseModel):
    """A task file. ``snapshot``, ``source``, ``related_apps``, ``trajectory``, ``proxy``: ignored (module doc)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str = Field(min_length=1)
    instruction: str = Field(min_length=1)
    config: list[dict[str, Any]] = Field(default_factory=list)
    evaluator: dict[str, Any]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommandParams(_Params):
    command: list[str] | str
    shell: bool = False


class DownloadFile(_Params):
    url: str
    path: str


class DownloadParams(_Params):
    files: list[DownloadFile] = Field(min_length=1)


class ActivateParams(_Params):
    window_name: str = Field(min_length=1)
    strict: bool = False  # OSWorld matches a part of the title unless strict; here the title must be exact
    by_class: Literal[False] = False


class SleepParams(_Params):
    seconds: float = Field(ge=0)


class Step(_Params):
    type: str
    parameters: dict[str, Any] = Field(default_factory=dict)


def load_task_files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    files = sorted(source.rglob("*.json")) if source.is_dir() else []
    if not files:
        raise SuiteError(f"{source}: no OSWorld task files (*.json) there")
    return files


def osworld_folders(source: Path, command: str) -> list[TaskFolder]:
    """A desktop task folder per task file under ``source``; SuiteError for what cannot run here."""
    return [task_folder(path, command) for path in load_task_files(source)]


def task_folder(path: Path, command: str) -> TaskFolder:
    where = str(path)
    task = parse(OSWorldTask, read_json(path), where, "fields: id, instruction, config, evaluator")
    setup = _Setup()
    for index, raw in enumerate(task.config):
        step_where = f"{where}: config[{index}]"
        setup.add(parse(Step, raw, step_where, "fields: type, parameters"), step_where, path.parent)
    goal, gold = evaluator_goal(task.evaluator, where, path.parent)
    name = task_id(PREFIX, task.id)
    spec = {
        "id": name,
        "prompt": local_instruction(task.instruction),
        "time_limit_s": TIME_LIMIT_S,
        **({"workspace": WORKSPACE} if setup.files else {}),
        "verifier": {"command": ["python3", "{task_dir}/verify.py"], "timeout_s": 60},
    }
    desktop: dict[str, Any] = {**SCREEN, "apps": setup.apps}
    if setup.start_timeout_s != START_TIMEOUT_S:
        desktop["start_timeout_s"] = setup.start_timeout_s
    return TaskFolder(
        id=name,
        source=where,
        files={
            "task.yaml": dump_yaml(command, where, spec),
            DESKTOP_FILE: dump_yaml(command, where, desktop),
            GOAL_FILE: json.dumps(goal, indent=2) + "\n",
            "verify.py": _VERIFIER.read_text(),
        },
        copies={**{f"{WORKSPACE}/{rel}": source for rel, source in setup.files.items()}, **gold},
    )


@dataclass
class _Setup:
    """What the config steps become: desktop.yaml's entries, in order, and the workspace's files."""

    apps: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)  # workspace path -> the local file
    start_timeout_s: float = START_TIMEOUT_S

    def add(self, step: Step, where: str, base: Path) -> None:
        if step.type not in SUPPORTED_STEPS:
            raise SuiteError(
                f"{where}: step type {step.type!r} cannot run offline ({_WHY.get(step.type, 'not implemented here')}); "
                f"supported: {', '.join(SUPPORTED_STEPS)}"
            )
        params_where = f"{where}.parameters"
        if step.type == "download":
            for file in parse(DownloadParams, step.parameters, params_where, "fields: files[]: url, path").files:
                self.files[workspace_path(file.path, params_where)] = local_file(file.url, base, params_where)
        elif step.type in ("execute", "command", "launch"):
            params = parse(CommandParams, step.parameters, params_where, "fields: command, shell")
            app: dict[str, Any] = {"argv": local_argv(params.command, params.shell, params_where)}
            if step.type != "launch":
                app["wait_exit"] = True  # OSWorld runs it to its end before the next step
            self.apps.append(app)
        elif step.type == "activate_window":
            params = parse(ActivateParams, step.parameters, params_where, "fields: window_name, strict, by_class")
            if not self.apps or "wait_exit" in self.apps[-1] or "window" in self.apps[-1]:
                raise SuiteError(f"{where}: activate_window must follow the launch of the app whose window it is")
            self.apps[-1]["window"] = params.window_name
        else:
            seconds = parse(SleepParams, step.parameters, params_where, "fields: seconds").seconds
            self.apps.append({"argv": ["sleep", f"{seconds:g}"], "wait_exit": True})
            self.start_timeout_s = max(self.start_timeout_s, seconds + 5)  # the sleep, and time to start it
