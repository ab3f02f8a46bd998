"""The GUI side of a rollout: the task's web app, the browser the harness drives, the step limit.

A web task (``Task.web``) or a harness that drives a browser (``needs_browser``) gets,
for each attempt, a fresh app (fresh state, a new state token) and a Chromium on a fresh
profile opened at the app, both on 127.0.0.1 and both torn down whatever happens. The
harness gets the prompt with ``{web_url}`` filled in and the browser's CDP URL; only
the verifier gets the app's state URL and token.

Browser agents may never stop on their own (cua-agent ignores its terminate action:
docs/harnesses.md, "cua-agent"), so the runner counts the model calls the proxy records for the attempt
and stops the harness past ``harness.max_turns``: one call, one step.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from components.environments import BrowserEnvironment, WebTask
from components.environments.web_tasks import start_app
from components.rollout._record import Record
from components.rollout.harnesses import HarnessAdapter
from components.rollout.tasks import Task


@dataclass
class Gui:
    """What one attempt of a GUI rollout runs with."""

    web: WebTask | None
    browser: BrowserEnvironment

    @property
    def cdp_url(self) -> str | None:
        return self.browser.cdp_url

    def render_prompt(self, prompt: str) -> str:
        return self.web.render_prompt(prompt) if self.web else prompt

    def verifier_env(self) -> dict[str, str]:
        """The state endpoint and its token: for the verifier, never the harness."""
        return self.web.verifier_env() if self.web else {}


def needs_gui(task: Task, adapter: HarnessAdapter) -> bool:
    return task.web is not None or adapter.needs_browser


@contextmanager
def open_gui(task: Task, adapter: HarnessAdapter, record: Record) -> Iterator[Gui | None]:
    """The app and the browser for one attempt (None for a task and harness that need neither).

    ``EnvironmentSetupError`` (no Chromium, no Playwright) propagates: the runner records
    it as an infrastructure error whose message says how to install what is missing.
    A failed teardown is noted in the outcome instead: the verdict already stands.
    """
    if not needs_gui(task, adapter):
        yield None
        return
    web = start_app(task.web, task.task_dir) if task.web is not None else None
    browser = BrowserEnvironment()
    try:
        browser.setup()
        # The agent starts on the app, as a person handed the task would.
        browser.reset(web.url if web else None)
        yield Gui(web, browser)
    finally:
        try:
            browser.teardown()
        except RuntimeError as exc:
            record.notes.append(f"browser teardown left processes behind: {exc}")
        if web is not None:
            web.stop()


@dataclass
class CallCounter:
    """Counts the calls the proxy records in a session file from the moment it is made.

    The proxy writes each call's line before the harness sees the answer, so the count
    is never behind the harness by more than the call in flight. Only new bytes are read
    at each check: browser-use's records carry a screenshot each.
    """

    path: Path
    limit: int
    offset: int = 0
    calls: int = 0

    def __post_init__(self) -> None:
        # Earlier attempts' calls are in the same file: only this attempt's count.
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def check(self) -> str | None:
        """A reason to stop the harness once it has made more than ``limit`` calls, else None."""
        try:
            with self.path.open("rb") as file:
                file.seek(self.offset)
                new = file.read()
        except FileNotFoundError:
            return None
        self.offset += len(new)
        self.calls += new.count(b"\n")  # a line is a call once its newline is written
        if self.calls <= self.limit:
            return None
        return (
            f"step limit: the harness made {self.calls} model calls, more than harness.max_turns={self.limit}, "
            "and was stopped; raise harness.max_turns if the task needs more steps"
        )
