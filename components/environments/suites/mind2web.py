"""Online-Mind2Web task lists as OpenForge web tasks: ``openforge tasks mind2web SOURCE OUT``.

Online-Mind2Web (Xue et al., 2025) ships its tasks as one JSON list::

    [{"task_id": "...", "confirmed_task": "Find ...", "website": "https://...", "reference_length": 5, "level": "easy"}]

and judges a run with WebJudge, an LLM reading the task's key points and the run's
screenshots. It has no reference answers, so the offline verdict needs a sidecar answers
file of OpenForge's, by task id (``answers.json`` beside the list unless named)::

    {"<task_id>": {"includes": ["strings a right answer contains"], "excludes": ["..."]}}

checked against the agent's final answer (web_suite.py, answer_verify.py).
``reference_length`` (the steps of the human demonstration) and ``level`` are not used:
they describe the task, they do not say what is right.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, RootModel

from components.environments.suites.common import SuiteError, TaskFolder, parse, read_json, task_id
from components.environments.suites.web_suite import AnswerKey, Sites, SiteTask, site_task_folder

ANSWERS_FILE = "answers.json"
PREFIX = "mind2web"


class Mind2WebTask(BaseModel):
    """One entry of the list. Other fields (reference_length, level, ...) are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    task_id: str = Field(min_length=1, description="The task's id: the key of its answer in the answers file.")
    confirmed_task: str = Field(min_length=1, description="The task: the prompt.")
    website: str = Field(min_length=1, description="The start URL; its origin picks the pages in the sites file.")


Answers = RootModel[dict[str, AnswerKey]]


def load_mind2web(source: Path, answers: Path) -> list[SiteTask]:
    """Every task of the JSON list ``source`` with its answer from ``answers``; SuiteError otherwise."""
    keys = parse(Answers, read_json(answers), str(answers), "fields: includes, excludes").root
    raw = read_json(source)
    if not isinstance(raw, list) or not raw:
        raise SuiteError(f"{source}: must be a non-empty JSON list of tasks (task_id, confirmed_task, website)")
    tasks = []
    for index, entry in enumerate(raw):
        where = f"{source} [{index}]"
        task = parse(Mind2WebTask, entry, where, "fields: task_id, confirmed_task, website")
        if task.task_id not in keys:
            raise SuiteError(
                f"{where}: task {task.task_id!r} has no answer in {answers}; add "
                f'"{task.task_id}": {{"includes": [...]}} there, or leave the task out of the list'
            )
        native = task.task_id
        tasks.append(SiteTask(task_id(PREFIX, native), where, task.confirmed_task, task.website, keys[native]))
    return tasks


def mind2web_folders(source: Path, answers: Path, sites: Path, command: str) -> list[TaskFolder]:
    site_map = Sites(sites)
    return [site_task_folder(task, site_map, command) for task in load_mind2web(source, answers)]
