"""A web benchmark task offline: its start URL served from a local copy of the site, its answer checked.

WebVoyager and Online-Mind2Web (webvoyager.py, mind2web.py) both give a question and the
live site to answer it on. Here the site is a folder of static pages named by a sites
file, an origin each:

    # sites.yaml: the origin of a task's start URL -> its pages, relative to this file
    https://recipes.example.com: sites/recipes

Each task folder gets a copy of its site's pages (``site/``) and a ``web.yaml`` with
``app: static`` (components/environments/static_site.py), so the rollout's web app serves
them on 127.0.0.1 and the browser opens the start URL's path there. The verdict comes from
the agent's final answer (answer_verify.py, copied in as ``verify.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from components.environments import static_site
from components.environments.static_site import StaticSiteSpec
from components.environments.suites.common import SuiteError, TaskFolder, dump_yaml, read_yaml
from components.environments.web_tasks import GOAL_FILE, TIME_LIMIT_S, WEB_FILE
from components.environments.webapps.goal import URL_PLACEHOLDER

SITES_FILE = "sites.yaml"
PAGES = "site"
_VERIFIER = Path(__file__).with_name("answer_verify.py")


class AnswerKey(BaseModel):
    """What a right final answer contains (and must not), compared ignoring case and spacing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    includes: list[str] = Field(min_length=1, description="Strings every right answer contains.")
    excludes: list[str] = Field(default_factory=list, description="Strings no right answer contains.")


@dataclass(frozen=True)
class SiteTask:
    """One benchmark task, read from its native file."""

    id: str
    source: str  # "<file> line N" or "<file> [i]": for errors and the written files' header
    question: str
    url: str  # the start URL, as the benchmark gives it
    answer: AnswerKey


def origin(url: str) -> str | None:
    """``scheme://host[:port]``, lower-cased; None when ``url`` is not an http(s) URL."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def start_path(url: str) -> str:
    parts = urlsplit(url.strip())
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class Sites:
    """The sites file: which folder of pages stands in for which origin."""

    def __init__(self, path: Path) -> None:
        raw = read_yaml(path)
        if not isinstance(raw, dict) or not raw:
            raise SuiteError(
                f"{path}: must map each site's origin to its folder of pages, e.g. https://www.example.com: sites/example"
            )
        self.path, self.folders = path, {}
        for key, folder in raw.items():
            site = origin(str(key))
            if site is None or site != str(key).rstrip("/").lower():
                raise SuiteError(f"{path}: {key!r} is not an origin; write scheme://host, e.g. https://www.example.com")
            pages = path.parent / str(folder)
            if not pages.is_dir():
                raise SuiteError(f"{path}: {key}: no folder {pages}; put the site's pages there or fix the path")
            self.folders[site] = pages

    def pages_for(self, url: str, where: str) -> Path:
        site = origin(url)
        if site is None:
            raise SuiteError(f"{where}: start URL {url!r} is not an http(s) URL")
        if site not in self.folders:
            raise SuiteError(
                f"{where}: no pages for {site} in {self.path} (it has {', '.join(sorted(self.folders))}); "
                "add the site's origin and a folder of its pages, or leave the task out of the task list"
            )
        return self.folders[site]


def prompt(question: str, url: str) -> str:
    """The benchmark's question, and where its site is: ``{web_url}`` becomes the local copy's start URL."""
    return (
        f"{question.strip()} The website {url.strip()} is open in the browser at {URL_PLACEHOLDER} "
        "(an offline copy of it). When you are done, give your answer as your final message."
    )


def site_task_folder(task: SiteTask, sites: Sites, command: str) -> TaskFolder:
    """The task folder: task.yaml, web.yaml (the static site), goal.json, verify.py, the site's pages."""
    pages = sites.pages_for(task.url, task.source)
    spec = {
        "id": task.id,
        "prompt": prompt(task.question, task.url),
        "time_limit_s": TIME_LIMIT_S,
        "verifier": {"command": ["python3", "{task_dir}/verify.py"], "timeout_s": 30},
    }
    web = StaticSiteSpec(app=static_site.APP, pages=PAGES, start=start_path(task.url)).model_dump()
    return TaskFolder(
        id=task.id,
        source=task.source,
        files={
            "task.yaml": dump_yaml(command, task.source, spec),
            WEB_FILE: dump_yaml(command, task.source, web),
            GOAL_FILE: json.dumps(task.answer.model_dump(), indent=2) + "\n",
            "verify.py": _VERIFIER.read_text(),
        },
        copies={PAGES: pages},
    )
