"""WebVoyager task lists as OpenForge web tasks: ``openforge tasks webvoyager SOURCE OUT``.

WebVoyager (He et al., 2024) ships its tasks as JSONL, one object a line::

    {"web_name": "Allrecipes", "id": "Allrecipes--0", "ques": "Provide a recipe for ...", "web": "https://www.allrecipes.com/"}

and its reference answers as ``reference_answer.json``, per site, by the number after
``--`` in the task id::

    {"Allrecipes": {"notice": "...", "answers": [{"id": 0, "type": "golden", "ans": "..."}]}}

``golden`` answers are the one right answer; ``possible`` ones are one right answer of
many. WebVoyager's own judge is GPT-4V reading screenshots; here it is the final answer's
containment of strings (web_suite.py, answer_verify.py): a golden answer's ``ans`` must
occur in it whole, unless the entry gives ``includes`` (and ``excludes``), OpenForge's
additions to the format, which a possible answer needs (containment of one of many right
answers would fail the others).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator

from components.environments.suites.common import SuiteError, TaskFolder, parse, read_json, read_jsonl, task_id
from components.environments.suites.web_suite import AnswerKey, Sites, SiteTask, site_task_folder

ANSWERS_FILE = "reference_answer.json"  # WebVoyager's name for it
PREFIX = "webvoyager"


class WebVoyagerTask(BaseModel):
    """One line of the task list. Other fields are ignored: copies of the list add their own."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    web_name: str = Field(min_length=1, description="The site's name: the key of its reference answers.")
    id: str = Field(description="<web_name>--<number>; the number keys the reference answer.")
    ques: str = Field(min_length=1, description="The question: the prompt.")
    web: str = Field(min_length=1, description="The start URL; its origin picks the pages in the sites file.")

    @field_validator("id")
    @classmethod
    def _numbered(cls, value: str) -> str:
        if not re.search(r"--\d+$", value):
            raise ValueError(f"{value!r} does not end in --<number> (<web_name>--<number>), which keys its answer")
        return value

    @property
    def number(self) -> int:
        return int(self.id.rsplit("--", 1)[1])


class ReferenceAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    type: Literal["golden", "possible"]
    ans: str
    includes: list[str] | None = Field(None, min_length=1, description="OpenForge's: what every right answer contains.")
    excludes: list[str] = Field(default_factory=list, description="OpenForge's: what no right answer contains.")

    def key(self, where: str) -> AnswerKey:
        if self.includes is not None:
            return AnswerKey(includes=self.includes, excludes=self.excludes)
        if self.type == "possible":
            raise SuiteError(
                f"{where}: a 'possible' answer is one right answer of many, which containment cannot judge; "
                'add "includes": [strings every right answer contains], or leave the task out of the task list'
            )
        return AnswerKey(includes=[self.ans], excludes=self.excludes)


class SiteAnswers(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    notice: str | None = None
    answers: list[ReferenceAnswer]


References = RootModel[dict[str, SiteAnswers]]


def load_webvoyager(source: Path, answers: Path) -> list[SiteTask]:
    """Every task of the JSONL ``source`` with its reference answer from ``answers``; SuiteError otherwise."""
    hint = "fields: notice, answers; answers[]: id, type, ans, includes, excludes"
    references = parse(References, read_json(answers), str(answers), hint).root
    tasks = []
    for where, raw in read_jsonl(source):
        task = parse(WebVoyagerTask, raw, where, "fields: web_name, id, ques, web")
        site = references.get(task.web_name)
        found = [a for a in site.answers if a.id == task.number] if site else []
        if len(found) != 1:
            count = len(found) or "no"
            raise SuiteError(
                f"{where}: {count} reference answers for task {task.id!r} in {answers} "
                f"(looked for id {task.number} under {task.web_name!r}); give it exactly one"
            )
        answer_where = f"{answers} ({task.web_name!r} answer id {task.number})"
        tasks.append(SiteTask(task_id(PREFIX, task.id), where, task.ques, task.web, found[0].key(answer_where)))
    return tasks


def webvoyager_folders(source: Path, answers: Path, sites: Path, command: str) -> list[TaskFolder]:
    site_map = Sites(sites)
    return [site_task_folder(task, site_map, command) for task in load_webvoyager(source, answers)]
