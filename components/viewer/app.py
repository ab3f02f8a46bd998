"""``openforge view``: a local web page over a run's store, file or S3 (docs/operations.md,
"The trajectory viewer").

Pages: the store's runs; a run's iterations with their headline metrics; an iteration's
tasks and groups, a page of tasks at a time (rewards, statuses, pass@k); an evaluation's
iterations the same way; one rollout's calls and its conversation as
the engine saw it, screenshots from the image store; and its training view, the rows the
trainer saw, each token coloured by who produced it (prompt, context, sampled and
trained) with its recorded logprob and the row's advantage. Reading the store happens in
a worker thread, so one slow page never stalls the others.
"""

from __future__ import annotations

import asyncio
import mimetypes
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

from components.core.config import TrackingConfig
from components.core.storage import ArtifactStore, RunLayout, StorageError
from components.viewer import _html, _reader, links
from components.viewer._iteration_html import IterationPage, iteration_body, page_number
from components.viewer._mlflow import MlflowLinks, RunLink
from components.viewer._rollout_html import rollout_body, training_body

_T = TypeVar("_T")
_BATCHES_KEPT = 2
_K = "{k:\\d+}"


class Viewer:
    def __init__(self, store: ArtifactStore, tracking: TrackingConfig | None = None) -> None:
        """``tracking``: where the runs' MLflow runs live (None: unknown, said on the pages)."""
        self.store = store
        self.mlflow = MlflowLinks(tracking)
        # Loading a batch imports veRL and a tokenizer (seconds): the latest iterations'
        # stay loaded, so browsing one iteration's rollouts pays that once.
        self._batches: OrderedDict[tuple[str, int], _reader.IterationBatch] = OrderedDict()
        self._batch_lock = threading.Lock()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_errors])
        app.router.add_get("/", self.runs)
        app.router.add_get(links.run_path("{name}"), self.run)
        for scope in (None, "{eval}"):  # a training run's iterations, an evaluation's
            app.router.add_get(links.iteration_path("{name}", _K, scope), self.iteration)
            app.router.add_get(links.rollout_path("{name}", _K, "{rollout}", scope), self.rollout)
            app.router.add_get(links.image_path("{name}", _K, "{file}", scope), self.image)
        app.router.add_get(links.training_path("{name}", _K, "{rollout}"), self.training)
        return app

    async def runs(self, request: web.Request) -> web.Response:
        names = await _off_loop(_reader.run_names, self.store)
        return _page(f"Runs in {self.store.root}", [], _html.runs_body(names))

    async def run(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        summaries, evaluations, mlflow = await _off_loop(self._run, name)
        return _page(f"Run {name}", [("runs", "/")], _html.run_body(name, summaries, evaluations, mlflow))

    def _run(self, name: str) -> tuple[list, list, RunLink]:
        layout = RunLayout(name)
        summaries = [(k, _reader.iteration_metrics(self.store, layout, k)) for k in _reader.iterations(self.store, layout)]
        evaluations = []
        for eval_id in _reader.evaluations(self.store, name):
            scope = RunLayout(name, eval_id)
            evaluations.append((eval_id, _reader.iterations(self.store, scope), _reader.eval_summary(self.store, scope)))
        return summaries, evaluations, self.mlflow.run_link(name)

    async def iteration(self, request: web.Request) -> web.Response:
        layout, k = _layout(request), int(request.match_info["k"])
        number = page_number(request.query.get("page"))
        view = await _off_loop(_reader.iteration_view, self.store, layout, k)
        mlflow = await _off_loop(self.mlflow.run_link, layout.name, layout.evaluation)
        body = iteration_body(IterationPage(layout.name, layout.evaluation, view, number, mlflow))
        return _page(_title(layout, k), _crumbs(layout.name), body)

    async def rollout(self, request: web.Request) -> web.Response:
        layout, k, rollout = _layout(request), int(request.match_info["k"]), request.match_info["rollout"]
        calls = await _off_loop(_reader.rollout_calls, self.store, layout, k, rollout)
        outcome = await _off_loop(_reader.rollout_outcome, self.store, layout, k, rollout)
        body = rollout_body(layout.name, k, rollout, calls, outcome, layout.evaluation)
        return _page(rollout, [*_crumbs(layout.name), (_title(layout, k), links.iteration_path(layout.name, k, layout.evaluation))], body)

    async def training(self, request: web.Request) -> web.Response:
        name, k, rollout = request.match_info["name"], int(request.match_info["k"]), request.match_info["rollout"]
        view = await _off_loop(self._training, name, k, rollout)
        crumbs = [*_crumbs(name), (f"iteration {k}", links.iteration_path(name, k)), (rollout, links.rollout_path(name, k, rollout))]
        return _page(f"{rollout}: what the trainer saw", crumbs, training_body(view))

    def _training(self, name: str, k: int, rollout: str) -> _reader.TrainingView:
        with self._batch_lock:
            loaded = self._batches.get((name, k))
            if loaded is None:
                with tempfile.TemporaryDirectory(prefix="openforge-view-") as scratch:
                    loaded = _reader.load_batch(self.store, RunLayout(name), k, Path(scratch))
                if loaded.batch is None:  # not trained yet: look again next time
                    return _reader.training_view(loaded, rollout)
                self._batches[(name, k)] = loaded
                while len(self._batches) > _BATCHES_KEPT:
                    self._batches.popitem(last=False)
            self._batches.move_to_end((name, k))
        return _reader.training_view(loaded, rollout)

    async def image(self, request: web.Request) -> web.Response:
        layout, k, file = _layout(request), int(request.match_info["k"]), request.match_info["file"]
        data = await _off_loop(_reader.image_bytes, self.store, layout, k, file)
        kind = mimetypes.guess_type(file)[0] or "application/octet-stream"
        return web.Response(body=data, content_type=kind, headers={"Cache-Control": "max-age=86400, immutable"})


def _layout(request: web.Request) -> RunLayout:
    return RunLayout(request.match_info["name"], request.match_info.get("eval"))


def _title(layout: RunLayout, k: int) -> str:
    return f"{layout.name}, evaluation {layout.evaluation}, iteration {k}" if layout.evaluation else f"{layout.name}, iteration {k}"


def _crumbs(name: str) -> list[tuple[str, str]]:
    return [("runs", "/"), (name, links.run_path(name))]


def _page(title: str, crumbs: list[tuple[str, str]], body: str) -> web.Response:
    return web.Response(text=_html.page(title, crumbs, body), content_type="text/html")


async def _off_loop(fn: Callable[..., _T], *args: Any) -> _T:
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


@web.middleware
async def _errors(request: web.Request, handler: Any) -> web.StreamResponse:
    # A page of a run, iteration or rollout the store does not hold is a 404 saying what is
    # missing, never a crash of the viewer.
    try:
        return await handler(request)
    except StorageError as exc:
        return web.Response(status=404, text=_html.page("Not found", [("runs", "/")], f"<p>{escape(str(exc))}</p>"), content_type="text/html")
    except (ValueError, KeyError) as exc:
        return web.Response(status=422, text=_html.page("Unreadable", [("runs", "/")], f"<p>{escape(repr(exc))}</p>"), content_type="text/html")
