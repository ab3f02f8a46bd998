"""The asyncio face of the generation loop.

Generation runs in one dedicated thread so the event loop keeps answering (health
checks, other connections, streamed chunks) while tokens are produced; each token is
handed back to the loop as soon as it exists, which is what makes streaming real.
Requests run one after another, in arrival order.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterator, Callable, TypeVar

from components.engine._generation import ChoiceReply, Job, ModelRunner, ScriptedReply, Step
from components.engine._prompt_logprobs import prompt_logprobs
from components.engine._vision import VisionInputs
from components.engine._sampling import SamplingParams

_T = TypeVar("_T")
_DONE = object()


class DevEngine:
    def __init__(self, runner: ModelRunner) -> None:
        self.runner = runner
        self.tokenizer = runner.tokenizer
        # Jobs queued or running in the generation thread; a job leaves only when the thread
        # is done with it, so a cancelled request stays counted until it really stopped.
        self.in_flight = 0
        # Seconds the generation thread spent on jobs: against a rollout phase's wall time,
        # the share in which the model, not the harnesses, held the rollouts up.
        self.busy_s = 0.0
        self._generation = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dev-engine-generate")
        # Templating and tokenizing long prompts is kept off the event loop too, but apart
        # from generation so it does not queue behind a long answer.
        self._preparation = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dev-engine-prepare")

    async def prepare(self, fn: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._preparation, fn, *args)

    async def score_prompt(self, prompt_ids: list[int], top: int) -> list[dict[str, dict[str, Any]] | None]:
        """vLLM's ``prompt_logprobs`` for ``prompt_ids``, in the generation thread (the model's one user)."""
        decode = self.runner.tokenizer.decode
        started = time.perf_counter()
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._generation, prompt_logprobs, self.runner.prompt_logits, prompt_ids, top, lambda t: decode([t])
            )
        finally:
            self.busy_s += time.perf_counter() - started

    async def generate(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        reply: ScriptedReply | ChoiceReply | None = None,
        vision: VisionInputs | None = None,
    ) -> AsyncIterator[Step]:
        """Yield steps as they are generated; closing the iterator early cancels the job."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        job = Job(
            prompt_ids=prompt_ids,
            params=params,
            emit=lambda step: _post(loop, queue, step),
            reply=reply,
            vision=vision,
        )
        self.in_flight += 1
        loop.run_in_executor(self._generation, self._run, job, loop, queue)
        try:
            while (item := await queue.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            job.cancelled.set()

    def _run(self, job: Job, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        try:
            if not job.cancelled.is_set():
                started = time.perf_counter()
                try:
                    self.runner.run(job)
                finally:
                    self.busy_s += time.perf_counter() - started
        except Exception as exc:  # surfaces in the request that caused it, not the thread
            _post(loop, queue, exc)
        finally:
            _post(loop, queue, _DONE)
            _call(loop, self._job_done)

    def _job_done(self) -> None:
        self.in_flight -= 1

    def close(self) -> None:
        self._generation.shutdown(wait=False, cancel_futures=True)
        self._preparation.shutdown(wait=False, cancel_futures=True)


def _post(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any], item: Any) -> None:
    _call(loop, queue.put_nowait, item)


def _call(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    """Run ``fn`` on the event loop from the generation thread."""
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the server is shutting down and its loop is closed
        pass
