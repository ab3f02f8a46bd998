"""Every address of a viewer page, in one place: the viewer's routes, its links between pages
and the links the commit step leaves in MLflow (docs/operations.md, "Looking at a run")
are all built here, so a page never moves without its links moving with it.

An evaluation (``openforge eval``, stored under ``<name>/evals/<id>/``) has the same pages
as a training iteration, under ``/runs/<name>/evals/<id>``.
"""

from __future__ import annotations

from typing import Any

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8585
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
# MLflow run tags: the run's page, and one per iteration with that iteration's page.
VIEWER_TAG = "openforge.viewer"
VIEWER_LINKS_ARTIFACT = "viewer.html"


def run_path(name: str) -> str:
    return f"/runs/{name}"


def scope_path(name: str, evaluation: str | None = None) -> str:
    """The prefix of a training run's iterations, or of an evaluation's."""
    return f"{run_path(name)}/evals/{evaluation}" if evaluation else run_path(name)


def iteration_path(name: str, iteration: int | str, evaluation: str | None = None) -> str:
    return f"{scope_path(name, evaluation)}/iterations/{iteration}"


def rollout_path(name: str, iteration: int | str, rollout_id: str, evaluation: str | None = None) -> str:
    return f"{iteration_path(name, iteration, evaluation)}/rollouts/{rollout_id}"


def training_path(name: str, iteration: int | str, rollout_id: str, evaluation: str | None = None) -> str:
    return f"{rollout_path(name, iteration, rollout_id, evaluation)}/training"


def image_path(name: str, iteration: int | str, file_name: str, evaluation: str | None = None) -> str:
    return f"{iteration_path(name, iteration, evaluation)}/images/{file_name}"


def page_url(path: str, base: str = DEFAULT_URL) -> str:
    return base.rstrip("/") + path


def link_iteration_in_mlflow(tracker: Any, name: str, iteration: int, base: str = DEFAULT_URL) -> str:
    """Tag the experiment's MLflow run with iteration ``iteration``'s viewer page and rewrite
    ``viewer.html`` (every tagged iteration's link, clickable in MLflow's artifact view);
    returns the page's URL. ``tracker``: components.core.tracking.ExperimentTracker."""
    url = page_url(iteration_path(name, iteration), base)
    tracker.client.set_tag(tracker.run_id, VIEWER_TAG, page_url(run_path(name), base))
    tracker.client.set_tag(tracker.run_id, f"{VIEWER_TAG}.iteration.{iteration}", url)
    tags = tracker.client.get_run(tracker.run_id).data.tags
    prefix = f"{VIEWER_TAG}.iteration."
    linked = sorted((int(key[len(prefix) :]), value) for key, value in tags.items() if key.startswith(prefix))
    items = "".join(f'<li><a href="{link}" target="_blank">iteration {k}</a></li>' for k, link in linked)
    tracker.log_text(
        f"<!doctype html><meta charset='utf-8'><p>Run {name} in the OpenForge viewer "
        f"(<code>openforge view CONFIG</code>):</p><ul>{items}</ul>",
        VIEWER_LINKS_ARTIFACT,
    )
    return url
