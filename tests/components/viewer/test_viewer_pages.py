"""The viewer's pages over iterations the repo's own writers and score step made
(benchmarks/viewer/synth.py): tasks paged, evaluations beside the iterations, and the
links between the viewer and MLflow in both directions."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from tests.components.viewer._serve import REPO, serve_and_get

from benchmarks.viewer.synth import synth_config, synthesize_iteration
from components.core.config import TrackingConfig
from components.core.services import free_port, openforge_argv, start_service
from components.core.storage import ArtifactStore, open_store
from components.viewer import links
from components.viewer._iteration_html import TASKS_PER_PAGE

TASKS = 2 * TASKS_PER_PAGE + 5  # three pages, the last one short


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ArtifactStore:
    store = open_store(f"file://{tmp_path_factory.mktemp('viewer-pages') / 'store'}")
    synthesize_iteration(store, synth_config("big", samples_per_task=2), tasks=TASKS)
    synthesize_iteration(store, synth_config("big", samples_per_task=3, evaluation="held-out"), tasks=2, seed=1)
    return store


def _viewer(store: ArtifactStore, tracking: TrackingConfig | None = None):
    from components.viewer.app import Viewer

    return Viewer(store, tracking).app()


def test_an_iteration_lists_its_tasks_a_page_at_a_time_and_every_rollout_on_exactly_one_page(store: ArtifactStore) -> None:
    base = links.iteration_path("big", 0)
    pages = serve_and_get(_viewer(store), [base, f"{base}?page=2", f"{base}?page=3", f"{base}?page=4", f"{base}?page=x"])
    first, second, third, beyond, bad = pages
    assert [p.status_code for p in pages] == [200, 200, 200, 422, 422]
    assert "3 page(s) of tasks" in beyond.text and "a page is a number from 1" in bad.text
    assert f'class="next-page" href="{base}?page=2"' in first.text and "prev-page" not in first.text
    assert f'class="prev-page" href="{base}"' in second.text and f'href="{base}?page=3"' in second.text
    assert "next-page" not in third.text and f"tasks {2 * TASKS_PER_PAGE + 1}–{TASKS} of {TASKS}" in third.text
    shown = [re.findall(r'/rollouts/([\w-]+)"', page.text) for page in (first, second, third)]
    assert [len(ids) for ids in shown] == [2 * TASKS_PER_PAGE, 2 * TASKS_PER_PAGE, 10]
    assert len(set().union(*shown)) == 2 * TASKS, "each rollout once, on one page"


def test_an_evaluation_is_listed_on_its_run_and_browsed_like_an_iteration(store: ArtifactStore) -> None:
    iteration = links.iteration_path("big", 0, "held-out")
    rollout = links.rollout_path("big", 0, "synth-task-0001-s2", "held-out")
    run, evaluation, page, missing = serve_and_get(
        _viewer(store), [links.run_path("big"), iteration, rollout, links.iteration_path("big", 3, "held-out")]
    )
    assert "<h2>Evaluations</h2>" in run.text and f'href="{iteration}"' in run.text
    assert "big, evaluation held-out, iteration 0" in evaluation.text and f'href="{rollout}"' in evaluation.text
    assert "2 task(s), 6 rollout(s)" in evaluation.text
    assert page.status_code == 200 and "Create answer.txt" in page.text
    assert "training view" not in page.text, "an evaluation trains nothing: no training view to link"
    assert "No behaviour analytics (an evaluation has none)" in evaluation.text
    assert missing.status_code == 404 and "does not exist" in missing.text


def test_without_a_tracking_store_the_pages_say_the_mlflow_run_is_unknown(store: ArtifactStore) -> None:
    (page,) = serve_and_get(_viewer(store), [links.iteration_path("big", 0)])
    assert "MLflow run: unknown" in page.text and 'id="mlflow-run"' not in page.text


def test_the_commit_step_links_each_iteration_to_its_viewer_page_and_the_viewer_links_back(
    quickstart_store: tuple[str, Path],
) -> None:
    from mlflow import MlflowClient

    from components.core.tracking import RUN_TAG

    uri, work = quickstart_store
    tracking = TrackingConfig(uri=f"sqlite:///{work / 'mlflow.db'}")
    client = MlflowClient(tracking_uri=tracking.uri)
    experiment = client.get_experiment_by_name("quickstart")
    (run,) = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{RUN_TAG}` = 'quickstart'")
    deep_link = run.data.tags[f"{links.VIEWER_TAG}.iteration.0"]
    assert deep_link == links.DEFAULT_URL + links.iteration_path("quickstart", 0)
    assert run.data.tags[links.VIEWER_TAG] == links.DEFAULT_URL + links.run_path("quickstart")
    listed = Path(client.download_artifacts(run.info.run_id, links.VIEWER_LINKS_ARTIFACT, str(work / "links"))).read_text()
    assert f'href="{deep_link}"' in listed

    # The link's page on a viewer (on another port here) shows the iteration and links back.
    (page,) = serve_and_get(_viewer(open_store(uri), tracking), [deep_link.removeprefix(links.DEFAULT_URL)])
    assert page.status_code == 200 and "quickstart, iteration 0" in page.text
    back = f'href="http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}"'
    assert back in page.text and "mlflow ui --backend-store-uri" in page.text

    # An MLflow UI served elsewhere (tracking.ui_url): the link and the command that serves it follow.
    elsewhere = tracking.model_copy(update={"ui_url": "http://127.0.0.1:5123"})
    (page,) = serve_and_get(_viewer(open_store(uri), elsewhere), [links.run_path("quickstart")])
    assert back.replace(":5000/", ":5123/") in page.text and "--host 127.0.0.1 --port 5123" in page.text


def test_openforge_view_on_a_config_serves_where_its_tracking_viewer_url_says(tmp_path: Path) -> None:
    """The commit step's MLflow links point at tracking.viewer_url: the viewer listens there unless told otherwise."""
    port = free_port()
    config = tmp_path / "exp.yaml"
    config.write_text(
        f"name: exp\ntasks: {{source: tasks}}\nstorage: {{uri: 'file://{tmp_path / 'store'}'}}\n"
        f"tracking: {{uri: 'sqlite:///{tmp_path / 'mlflow.db'}', viewer_url: 'http://127.0.0.1:{port}'}}\n"
    )
    argv = openforge_argv("view", str(config))  # no --port: the config's
    with start_service("viewer", argv, port=port, log_dir=tmp_path / "logs", health_path="/", env={"PYTHONPATH": str(REPO)}):
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=30)
        assert page.status_code == 200 and "OpenForge" in page.text


def test_a_tracking_store_not_made_yet_is_said_and_left_unmade(store: ArtifactStore, tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    (page,) = serve_and_get(_viewer(store, TrackingConfig(uri=f"sqlite:///{db}")), [links.run_path("big")])
    assert f"{db} does not exist" in page.text and not db.exists()


def test_an_iteration_shows_the_analytics_its_commit_stored(quickstart_store: tuple[str, Path]) -> None:
    from components.analytics import read_analytics
    from components.core.storage import RunLayout
    from components.viewer._html import number

    uri, _ = quickstart_store
    store = open_store(uri)
    summary = read_analytics(store, RunLayout("quickstart"), 0)
    (page,) = serve_and_get(_viewer(store), [links.iteration_path("quickstart", 0)])

    assert summary is not None and f"{summary.overall.rollouts} rollout(s); each analytic" in page.text
    for name, estimate in summary.overall.analytics.items():
        assert f"<td>{name}</td><td>{number(estimate.mean)}</td><td>{estimate.n}</td>" in page.text, name
