"""A stand-in for the `openforge` program in the images: same command lines, trivial steps.

Runs the *compiled* iteration manifest end to end in seconds (no model, no harness):
each step does the least that keeps the data contracts (store keys, outcome records,
metrics, checkpoint markers) and appends `<step> <iteration> [<id>]` to the file named
by env FAKE_OPENFORGE_LOG, so tests can count what ran. The prepare and commit steps are
the real ones (they hold the run's state machine); the exit hook only logs its status.
Env FAKE_FAIL_TRAIN=K makes the train step of iteration K fail once; FAKE_FAIL_COMMIT=K
makes every commit attempt of iteration K fail while it is set (retries included). A train
step whose checkpoint is committed does nothing, as the real one does.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

from components.core.config import CONFIG_ENV, config_from_env
from components.core.metrics import merge_metrics
from components.core.outcome import Outcome, RolloutStatus
from components.core.storage import RunLayout, open_store


def _log(*words: object) -> None:
    with open(os.environ["FAKE_OPENFORGE_LOG"], "a") as fh:
        fh.write(" ".join(map(str, words)) + "\n")


def _store():
    config = config_from_env()
    return config, open_store(config.storage.uri, config.storage.endpoint_url), RunLayout(config.name)


def _serve(port: int, handler) -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = handler(self.path)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def _get(url: str, deadline_s: float = 20.0) -> bytes:
    end = time.monotonic() + deadline_s
    while True:
        try:
            return urllib.request.urlopen(url, timeout=5).read()
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


def write_task(tasks_dir: Path, task_id: str, reward: float) -> None:
    """A real task folder (the real prepare step loads it) whose `reward` file the fake rollout reads."""
    folder = tasks_dir / task_id
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(f"id: {task_id}\nprompt: p\nverifier: {{command: [python3, v.py]}}\n")
    (folder / "reward").write_text(str(reward))


def prepare(args: argparse.Namespace) -> None:
    from pipelines.prepare import parse_iteration, prepare_step
    from pipelines.steps.prepare import write_outputs

    config, store, _ = _store()
    prepared = prepare_step(config, parse_iteration(args.iteration), store, args.stop_at)
    write_outputs(prepared, Path(args.out_dir))
    _log("prepare", prepared.iteration, "pending" if prepared.pending else "done")


def serve(args: argparse.Namespace) -> None:
    config, store, layout = _store()
    newest = config.algorithm.sampled_version(args.iteration)
    version = next(v for v in range(newest, -1, -1) if v == 0 or store.exists(layout.checkpoint_marker(v)))
    _log("serve", args.iteration, f"v{version}")
    _serve(args.port, lambda path: (200, json.dumps({"policy_version": str(version)}).encode()))


def proxy(args: argparse.Namespace) -> None:
    def handle(path: str) -> tuple[int, bytes]:
        if not path.startswith("/s/"):
            return 200, b"ok"
        session = path.split("/")[2]
        body = _get(f"{args.upstream}/v1/models")
        Path(args.out).mkdir(parents=True, exist_ok=True)
        with open(Path(args.out) / f"{session}.jsonl", "a") as fh:
            fh.write(json.dumps({"session_id": session, **json.loads(body)}) + "\n")
        return 200, body

    _serve(args.port, handle)


def rollout(args: argparse.Namespace) -> None:
    reward = float((Path(args.task_dir) / "reward").read_text())
    answer = json.loads(_get(f"{args.proxy_url}/s/{args.rollout_id}/v1/models"))
    task_id, sample = args.rollout_id.rsplit("-s", 1)
    outcome = Outcome(
        rollout_id=args.rollout_id, task_id=task_id, sample_index=int(sample), iteration=args.iteration,
        status=RolloutStatus.OK, reward=reward, passed=reward > 0, num_calls=1,
        extra={"policy_version": answer["policy_version"], "trajectory_seen": Path(args.trajectory).exists()},
    )  # fmt: skip
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "outcome.json").write_text(outcome.model_dump_json())
    _log("rollout", args.iteration, args.rollout_id)


def score(args: argparse.Namespace) -> None:
    config, store, layout = _store()
    folder = layout.outcome(args.iteration, "x").rsplit("/", 1)[0]
    outcomes = [Outcome.model_validate_json(store.get_bytes(k)) for k in store.list(folder + "/")]
    rewards = [o.reward or 0.0 for o in outcomes]
    store.put_bytes(layout.rewards(args.iteration), json.dumps({"records": [], "metrics": {}}).encode())
    merge_metrics(store, layout.metrics(args.iteration), {
        "reward/mean": sum(rewards) / len(rewards), "pass@1": sum(r > 0 for r in rewards) / len(rewards),
        "pass@k": 0.5, "pass^k": 0.25, "rollouts/ok": float(len(outcomes)), "rollouts/timeout": 0.0,
    })  # fmt: skip
    _log("score", args.iteration)


def train(args: argparse.Namespace) -> None:
    config, store, layout = _store()
    _fail_once("train", args.iteration)
    version = args.iteration + 1
    if store.exists(layout.checkpoint_marker(version)):
        return
    store.put_bytes(f"{layout.checkpoint(version)}/model.bin", b"weights")
    merge_metrics(store, layout.metrics(args.iteration), {"train/loss": 1.0 / version, "batch/rows": 4.0, "batch/trained_tokens": 96.0 * version})
    store.put_bytes(layout.checkpoint_marker(version), b"")
    _log("train", args.iteration)


def commit(args: argparse.Namespace) -> None:
    from pipelines.commit import commit_iteration

    if os.environ.get("FAKE_FAIL_COMMIT") == str(args.iteration):
        sys.exit("commit failed on purpose")
    commit_iteration(config_from_env(), args.iteration, os.environ[CONFIG_ENV])
    _log("commit", args.iteration)


def record_status(args: argparse.Namespace) -> None:
    _log("record-status", args.workflow, args.status)


def _fail_once(step: str, iteration: int) -> None:
    flag = Path(f"{os.environ['FAKE_OPENFORGE_LOG']}.failed-{step}-{iteration}")
    if os.environ.get(f"FAKE_FAIL_{step.upper()}") == str(iteration) and not flag.exists():
        flag.touch()
        sys.exit(f"{step} failed on purpose")


def main() -> None:
    parser = argparse.ArgumentParser(prog="openforge")
    commands = parser.add_subparsers(dest="command", required=True)
    proxy_parser = commands.add_parser("proxy")
    for flag in ("--upstream", "--out"):
        proxy_parser.add_argument(flag, required=True)
    proxy_parser.add_argument("--port", type=int, required=True)
    proxy_parser.add_argument("--training", action="store_true")
    for flag in ("--sampling-seed", "--tool-call-parser", "--reasoning-parser"):
        proxy_parser.add_argument(flag)
    proxy_parser.set_defaults(run=proxy)
    steps = commands.add_parser("step").add_subparsers(dest="step", required=True)
    status = steps.add_parser("record-status")
    status.add_argument("--workflow", required=True)
    status.add_argument("--status", required=True)
    status.set_defaults(run=record_status)
    for name, fn in (("prepare", prepare), ("serve", serve), ("rollout", rollout), ("score", score), ("train", train), ("commit", commit)):
        step = steps.add_parser(name)
        step.add_argument("--iteration", type=str if name == "prepare" else int, required=True)
        step.set_defaults(run=fn)
        if name == "prepare":
            step.add_argument("--out-dir", required=True)
            step.add_argument("--stop-at", type=int, required=True)
        if name == "serve":
            step.add_argument("--host", required=True)
            step.add_argument("--port", type=int, required=True)
        if name == "rollout":
            for flag in ("--rollout-id", "--task-dir", "--proxy-url", "--trajectory", "--out"):
                step.add_argument(flag, required=True)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
