"""``openforge view``: a local web page over a run's store, file or S3 (docs/operations.md,
"The trajectory viewer").

Pages: the store's runs; a run's iterations with their headline metrics; an iteration's
tasks and groups (rewards, statuses, pass@k); one rollout's calls and its conversation as
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

from components.core.storage import ArtifactStore, StorageError
from components.viewer import _html, _reader

_T = TypeVar("_T")
_BATCHES_KEPT = 2


class Viewer:
    def __init__(self, store: ArtifactStore, mlflow_url: str | None = None) -> None:
        self.store = store
        self.mlflow_url = mlflow_url
        # Loading a batch imports veRL and a tokenizer (seconds): the latest iterations'
        # stay loaded, so browsing one iteration's rollouts pays that once.
        self._batches: OrderedDict[tuple[str, int], _reader.IterationBatch] = OrderedDict()
        self._batch_lock = threading.Lock()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_errors])
        app.router.add_get("/", self.runs)
        app.router.add_get("/runs/{name}", self.run)
        app.router.add_get("/runs/{name}/iterations/{k:\\d+}", self.iteration)
        app.router.add_get("/runs/{name}/iterations/{k:\\d+}/rollouts/{rollout}", self.rollout)
        app.router.add_get("/runs/{name}/iterations/{k:\\d+}/rollouts/{rollout}/training", self.training)
        app.router.add_get("/runs/{name}/iterations/{k:\\d+}/images/{file}", self.image)
        return app

    async def runs(self, request: web.Request) -> web.Response:
        names = await _off_loop(_reader.run_names, self.store)
        return _page(f"Runs in {self.store.root}", [], _html.runs_body(names))

    async def run(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        summaries = await _off_loop(self._summaries, name)
        return _page(f"Run {name}", [("runs", "/")], _html.run_body(name, summaries, self.mlflow_url))

    def _summaries(self, name: str) -> list[tuple[int, dict[str, float]]]:
        return [(k, _reader.iteration_view(self.store, name, k).metrics) for k in _reader.iterations(self.store, name)]

    async def iteration(self, request: web.Request) -> web.Response:
        name, k = request.match_info["name"], int(request.match_info["k"])
        view = await _off_loop(_reader.iteration_view, self.store, name, k)
        return _page(f"{name}, iteration {k}", _crumbs(name), _html.iteration_body(name, view))

    async def rollout(self, request: web.Request) -> web.Response:
        name, k, rollout = request.match_info["name"], int(request.match_info["k"]), request.match_info["rollout"]
        calls = await _off_loop(_reader.rollout_calls, self.store, name, k, rollout)
        outcome = await _off_loop(_reader.rollout_outcome, self.store, name, k, rollout)
        body = _html.rollout_body(name, k, rollout, calls, outcome)
        return _page(rollout, [*_crumbs(name), (f"iteration {k}", f"/runs/{name}/iterations/{k}")], body)

    async def training(self, request: web.Request) -> web.Response:
        name, k, rollout = request.match_info["name"], int(request.match_info["k"]), request.match_info["rollout"]
        view = await _off_loop(self._training, name, k, rollout)
        crumbs = [*_crumbs(name), (f"iteration {k}", f"/runs/{name}/iterations/{k}"), (rollout, f"/runs/{name}/iterations/{k}/rollouts/{rollout}")]
        return _page(f"{rollout}: what the trainer saw", crumbs, _html.training_body(view))

    def _training(self, name: str, k: int, rollout: str) -> _reader.TrainingView:
        with self._batch_lock:
            loaded = self._batches.get((name, k))
            if loaded is None:
                with tempfile.TemporaryDirectory(prefix="openforge-view-") as scratch:
                    loaded = _reader.load_batch(self.store, name, k, Path(scratch))
                if loaded.batch is None:  # not trained yet: look again next time
                    return _reader.training_view(loaded, rollout)
                self._batches[(name, k)] = loaded
                while len(self._batches) > _BATCHES_KEPT:
                    self._batches.popitem(last=False)
            self._batches.move_to_end((name, k))
        return _reader.training_view(loaded, rollout)

    async def image(self, request: web.Request) -> web.Response:
        name, k, file = request.match_info["name"], int(request.match_info["k"]), request.match_info["file"]
        data = await _off_loop(_reader.image_bytes, self.store, name, k, file)
        kind = mimetypes.guess_type(file)[0] or "application/octet-stream"
        return web.Response(body=data, content_type=kind, headers={"Cache-Control": "max-age=86400, immutable"})


def _crumbs(name: str) -> list[tuple[str, str]]:
    return [("runs", "/"), (name, f"/runs/{name}")]


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
