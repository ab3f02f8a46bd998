"""Web tasks: a task folder whose ``web.yaml`` names a seeded app to start before the harness.

What the rollout runner calls (docs/environments.md)::

    web = start_web_task(task.task_dir)        # None for a task without web.yaml
    prompt = web.render_prompt(task.prompt)    # {web_url} -> http://127.0.0.1:<port>
    ... run the harness (a browser environment's reset(web.url) opens the app) ...
    verifier env |= web.verifier_env()         # the state endpoint and its token
    web.stop()

``web.yaml`` sits beside ``task.yaml`` (docs/tasks.md says why). ``app: miniwob`` serves
a MiniWoB++ task page instead of one of our apps: ``goal`` names the MiniWoB task, ``seed``
its episode (miniwob.py). The task folders are generated from (app, seed, goal) and checked
in (``python -m components.environments write-web-tasks DIR``; ``openforge tasks miniwob``);
tests keep them equal. ``app: static`` serves a folder of the task's own pages instead
(static_site.py): the offline copy of a benchmark's live site (components/environments/suites/).
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from components.core.validation import join_errors
from components.environments import miniwob, static_site
from components.environments.base import EnvironmentSetupError
from components.environments.static_site import StaticSiteSpec
from components.environments.web_choices import CHOICES, Candidate
from components.environments.webapps import APPS
from components.environments.webapps.goal import URL_PLACEHOLDER, Goal
from components.environments.webapps.server import TOKEN_HEADER, RunningApp, serve

WEB_FILE = "web.yaml"
GOAL_FILE = "goal.json"
STATE_URL_ENV = "OPENFORGE_WEB_STATE_URL"
STATE_TOKEN_ENV = "OPENFORGE_WEB_STATE_TOKEN"
TIME_LIMIT_S = 600  # a browser agent takes a model call per click
# The checked-in suite: (app, seed, goal). Other seeds make other worlds of the same tasks.
SUITE = (
    ("shop", 1, "checkout"),
    ("shop", 2, "checkout"),
    ("form", 1, "submit"),
    ("form", 2, "submit"),
    ("flights", 1, "book"),
    ("flights", 2, "cheapest-code"),
)


class WebTaskError(ValueError):
    """A web.yaml that cannot be used; the message names the file, the field and the fix."""


class WebTaskSpec(BaseModel):
    """``web.yaml``: which app, which seeded world, which of the app's goals."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    app: Literal["shop", "form", "flights", "miniwob"]
    seed: int = Field(ge=0)
    goal: str

    @model_validator(mode="after")
    def _known_goal(self) -> "WebTaskSpec":
        if self.app == miniwob.APP:
            try:
                names = miniwob.task_names()
            except EnvironmentSetupError as exc:
                raise ValueError(str(exc)) from None
            if self.goal not in names:
                raise ValueError(
                    f"goal {self.goal!r} is not a MiniWoB task of the installed miniwob package "
                    f"(its pages are in {miniwob.pages_root() / 'miniwob'})"
                )
            return self
        names = sorted(APPS[self.app].goals(APPS[self.app].build_world(self.seed)))
        if self.goal not in names:
            raise ValueError(f"goal {self.goal!r} is not one of the {self.app} app's goals: {', '.join(names)}")
        return self


# What a web.yaml may hold: a seeded app (or a MiniWoB page) or a static site.
WebSpec = WebTaskSpec | StaticSiteSpec
_SPECS: dict[str, type[WebTaskSpec] | type[StaticSiteSpec]] = {
    **{name: WebTaskSpec for name in get_args(WebTaskSpec.model_fields["app"].annotation)},
    static_site.APP: StaticSiteSpec,
}
_FIELDS_HINT = "misspelled? fields: app, seed, goal; for app: static, app, pages, start"


def load_web_spec(task_dir: str | Path) -> WebSpec | None:
    """The task's ``web.yaml``, validated; None when the task has none (not a web task)."""
    path = Path(task_dir) / WEB_FILE
    if not path.exists():
        return None
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise WebTaskError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise WebTaskError(f"{path}: the top level must be a mapping (app, ...)")
    app = raw.get("app")
    if not isinstance(app, str) or app not in _SPECS:
        found = "required field is missing" if app is None else f"{app!r} is not an app"
        raise WebTaskError(f"{path}: app: {found}; set it to one of {', '.join(_SPECS)}")
    try:
        spec = _SPECS[app].model_validate(raw)
    except ValidationError as exc:
        raise WebTaskError(f"{path}: {join_errors(exc, _FIELDS_HINT)}") from None
    if isinstance(spec, StaticSiteSpec) and not (Path(task_dir) / spec.pages).is_dir():
        raise WebTaskError(f"{path}: pages: no folder {spec.pages!r} in the task folder; put the site's pages there")
    return spec


@dataclass
class WebTask:
    """A web task's app, running on 127.0.0.1 for one rollout."""

    spec: WebSpec
    app: RunningApp
    path: str = ""  # where the agent starts: a MiniWoB task's page, a static site's start; our apps' home page

    @property
    def url(self) -> str:
        return self.app.url + self.path

    def render_prompt(self, prompt: str) -> str:
        return prompt.replace(URL_PLACEHOLDER, self.url)

    def verifier_env(self) -> dict[str, str]:
        """For the verifier only: the harness must not get the token."""
        return {STATE_URL_ENV: self.app.state_url, STATE_TOKEN_ENV: self.app.token}

    def state(self) -> dict:
        """What the verifier reads from the state endpoint (the generator and tests read it too)."""
        request = urllib.request.Request(self.app.state_url, headers={TOKEN_HEADER: self.app.token})
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())

    def stop(self) -> None:
        self.app.stop()

    def __enter__(self) -> "WebTask":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_web_task(task_dir: str | Path) -> WebTask | None:
    """Start the app ``web.yaml`` names, with a fresh state; None for a task without web.yaml."""
    spec = load_web_spec(task_dir)
    return None if spec is None else start_app(spec, Path(task_dir))


def start_app(spec: WebSpec, task_dir: Path | None = None) -> WebTask:
    """Serve ``spec``'s app with a fresh state; a static site's pages are in ``task_dir``."""
    if isinstance(spec, StaticSiteSpec):
        if task_dir is None:
            raise ValueError("a static site's pages are in its task folder: pass task_dir")
        return WebTask(spec, serve(partial(static_site.add_routes, task_dir / spec.pages), {}), spec.start)
    if spec.app == miniwob.APP:
        running = serve(partial(miniwob.add_routes, spec.goal, spec.seed), miniwob.new_state(spec.goal, spec.seed))
        return WebTask(spec, running, miniwob.task_path(spec.goal))
    module = APPS[spec.app]
    world = module.build_world(spec.seed)
    return WebTask(spec, serve(lambda app, state: module.add_routes(app, world, state), module.new_state()))


def task_id(spec: WebTaskSpec) -> str:
    if spec.app == miniwob.APP:
        return f"miniwob-{spec.goal}-{spec.seed}"
    return f"web-{spec.app}-{spec.goal}-{spec.seed}"


def task_files(spec: WebTaskSpec) -> dict[str, str]:
    """The files of the task folder for one of our apps' ``spec``: task.yaml, web.yaml, goal.json, verify.py.

    Goals web_choices.py knows also offer browser-use's candidate turns (``choices``).
    """
    module = APPS[spec.app]
    world = module.build_world(spec.seed)
    make_choices = CHOICES.get((spec.app, spec.goal))
    source = "the app in components/environments/webapps/"
    if make_choices is not None:
        source += " (candidate turns: components/environments/web_choices.py)"
    return folder_files(spec, module.goals(world)[spec.goal], "python -m components.environments write-web-tasks "
                        "examples/tasks/web", source, None if make_choices is None else make_choices(world))  # fmt: skip


def folder_files(
    spec: WebTaskSpec, goal: Goal, command: str, source: str, choices: list[list[Candidate]] | None = None
) -> dict[str, str]:
    """A web task folder's files; the header names the ``command`` that wrote them and what to change instead."""
    task = {
        "id": task_id(spec),
        "prompt": goal.prompt,
        "time_limit_s": TIME_LIMIT_S,
        "verifier": {"command": ["python3", "{task_dir}/verify.py"], "timeout_s": 30},
    }
    if choices is not None:
        task["choices"] = choices
    header = f"# Generated by `{command}`;\n# change {source}, not this file.\n"
    return {
        "task.yaml": header + yaml.safe_dump(task, sort_keys=False, width=1000),
        WEB_FILE: header + yaml.safe_dump(spec.model_dump(), sort_keys=False),
        GOAL_FILE: json.dumps(goal.expect, indent=2, sort_keys=True) + "\n",
        "verify.py": (Path(__file__).parent / "web_verify.py").read_text(),
    }


def write_suite(root: Path) -> list[Path]:
    written = []
    for app, seed, goal in SUITE:
        spec = WebTaskSpec(app=app, seed=seed, goal=goal)
        folder = root / task_id(spec)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in task_files(spec).items():
            (folder / name).write_text(text)
        written.append(folder)
    return written

