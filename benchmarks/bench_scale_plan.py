"""What one iteration weighs on a cluster at 512 and 4,096 concurrent rollouts: the figures
behind docs/scale.md, measured here.

    make bench-scale-plan        (about a minute; stores the result, rewrites "Measured here" in docs/scale.md)
    .venv/bin/python benchmarks/bench_scale_plan.py --render   # the section from the stored result only
    .venv/bin/python benchmarks/bench_scale_plan.py --no-doc   # print the figures; store and write nothing

For each size it compiles the iteration (examples/cluster.yaml with 1,024 tasks x 4 samples
per iteration, so 4,096 rollouts, at a rollout concurrency of 512 and of 4,096) and runs
every check `openforge compile --check` runs; measures the manifests, the fan-out list the
prepare step hands to `withParam`, and the workflow's node status as Argo would hold it
once every rollout pod has finished: one NodeStatus per pod, built from the compiled
rollout template (its input parameters and output artifacts, the keys filled in), checked
against Argo's strict schema, then sized raw and as Argo compresses it (gzip, base64, in
``status.compressedNodes``). Last, the recording proxy sidecar's start-up time and resident
memory, over several starts. The raw figures are stored in ``benchmarks/results/scale-plan.json``
and the section rendered from them alone, so a test can check docs/scale.md against them.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.doc_sections import commit_text, machine_summary, now_text, write_section  # noqa: E402

SCALE_DOC = REPO / "docs" / "scale.md"
RESULT = REPO / "benchmarks" / "results" / "scale-plan.json"  # the section is rendered from it alone
SECTION = "Measured here"
SAMPLES = 4
SIZES = (512, 4096)  # rollouts in the iteration, all running at once
ETCD_LIMIT = 1_000_000  # Argo's documented ceiling for a workflow object (docs/scale.md)
# Realistic task ids: SWE-bench-style ids (`django__django-11099`, with its underscores made dashes).
_TASK_ID = "django-django-{:05d}"


def scale_config(rollouts: int, concurrency: int) -> Any:
    """examples/cluster.yaml planned for ``rollouts`` rollouts at ``concurrency``."""
    from components.core.config import load_config

    config = load_config(REPO / "examples" / "cluster.yaml").model_copy(deep=True)
    config.tasks.per_iteration = rollouts // SAMPLES
    config.rollout.samples_per_task = SAMPLES
    config.rollout.concurrency = concurrency
    return config


def fan_out_list(config: Any, rollouts: int) -> list[dict]:
    """What prepare hands the generate DAG for ``rollouts`` rollouts (components/rollout/prepare.py)."""
    from components.rollout.prepare import fan_out, plan_rollouts
    from components.rollout.tasks import Task, VerifierSpec

    verifier = VerifierSpec(command=["python3", "{task_dir}/verify.py"])
    tasks = [
        Task(id=_TASK_ID.format(i), prompt="Fix the failing test.", verifier=verifier, task_dir=Path("/tasks"))
        for i in range(rollouts // SAMPLES)
    ]
    return fan_out({"rollouts": plan_rollouts(config, tasks, iteration=7)})


def _fill(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    return text


def _artifacts(declared: list[dict], params: dict[str, str]) -> list[dict]:
    return [
        {"name": a["name"], "path": a["path"], **({"s3": {"key": _fill(a["s3"]["key"], params)}} if "s3" in a else {})}
        for a in declared
    ]


def _rollout_nodes(workflow: str, index: int, item: dict, template: dict, values: dict[str, str], rng: random.Random) -> list[dict]:
    """One finished rollout as Argo records it: a Retry node (the template has a retryStrategy)
    and its Pod node, with the fields of Argo's NodeStatus and values that vary as real ones do."""
    item_json = json.dumps(item, separators=(",", ":"), sort_keys=True)
    params = {f"inputs.parameters.{k}": str(v) for k, v in values.items()}
    inputs = {
        "parameters": [{"name": p["name"], "value": params[f"inputs.parameters.{p['name']}"]} for p in template["inputs"]["parameters"]],
        "artifacts": _artifacts(template["inputs"].get("artifacts", []), params),
    }
    started = dt.datetime(2026, 12, 2, 10, 0, 0) + dt.timedelta(seconds=rng.randint(0, 7200))
    finished = started + dt.timedelta(seconds=rng.randint(60, 2400))
    times = {"startedAt": f"{started:%Y-%m-%dT%H:%M:%SZ}", "finishedAt": f"{finished:%Y-%m-%dT%H:%M:%SZ}"}
    retry_id, pod_id = (f"{workflow}-{rng.randrange(10**9, 10**10)}" for _ in range(2))
    name = f"{workflow}.generate.rollout({index}:{item_json})"
    common = {"templateName": "rollout", "templateScope": f"namespaced/{workflow.rsplit('-', 1)[0]}-iteration", "phase": "Succeeded"}
    retry = {
        "id": retry_id, "name": name, "displayName": f"rollout({index}:{item_json})", "type": "Retry", **common,
        "boundaryID": f"{workflow}-1111111111", **times, "progress": "1/1", "inputs": inputs, "children": [pod_id],
    }  # fmt: skip
    pod = {
        "id": pod_id, "name": f"{name}(0)", "displayName": f"rollout({index}:{item_json})(0)", "type": "Pod", **common,
        "boundaryID": f"{workflow}-1111111111", **times, "progress": "1/1",
        "resourcesDuration": {"cpu": rng.randint(60, 9000), "memory": rng.randint(200, 40000)},
        "inputs": inputs, "outputs": {"artifacts": _artifacts(template["outputs"]["artifacts"], params), "exitCode": "0"},
        "hostNodeName": f"ip-10-42-{rng.randint(0, 255)}-{rng.randint(0, 255)}.ec2.internal",
    }  # fmt: skip
    return [retry, pod]


def node_status(docs: list[dict], fan_out: list[dict]) -> dict[str, dict]:
    """The ``status.nodes`` of a workflow whose every rollout pod finished (the rest of the DAG left out)."""
    from pipelines.compile import manifest_of_kind

    template = next(t for t in manifest_of_kind(docs, "WorkflowTemplate")["spec"]["templates"] if t["name"] == "rollout")
    workflow = "swe-train-k7x2q"
    rng = random.Random(0)
    nodes = {}
    for index, item in enumerate(fan_out):
        values = {
            "iteration": "7",
            "rollout-id": item["rollout_id"],
            "task-id": item["task_id"],
            "deadline": str(item["deadline_s"]),
            "serve-address": "10.42.17.3:8000",
        }
        nodes.update((node["id"], node) for node in _rollout_nodes(workflow, index, item, template, values, rng))
    # The fan-out list sits in the status twice: prepare's output parameter and generate's input.
    listed = json.dumps(fan_out, separators=(",", ":"))
    for node_id, node_type, field in ((f"{workflow}-3333333333", "Pod", "outputs"), (f"{workflow}-4444444444", "DAG", "inputs")):
        name = "prepare" if field == "outputs" else "generate"
        nodes[node_id] = {
            "id": node_id, "name": f"{workflow}.{name}", "displayName": name, "type": node_type, "templateName": name,
            "phase": "Succeeded", field: {"parameters": [{"name": "rollouts", "value": listed}]},
        }  # fmt: skip
    parent = {
        "id": f"{workflow}-2222222222", "name": f"{workflow}.generate.rollout", "displayName": "rollout",
        "type": "TaskGroup", "templateName": "rollout", "phase": "Succeeded",
        "children": [n["id"] for n in nodes.values() if n["type"] == "Retry"],
    }  # fmt: skip
    return {parent["id"]: parent, **nodes}


def _checked_status(nodes: dict[str, dict]) -> int:
    """Findings of Argo's strict schema on a Workflow holding ``nodes`` (0: the shape is Argo's)."""
    from pipelines.validate import schema_findings

    sample = dict(list(nodes.items())[:5])
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"name": "swe-train-k7x2q"},
        "spec": {"workflowTemplateRef": {"name": "swe-iteration"}}, "status": {"phase": "Running", "nodes": sample},
    }  # fmt: skip
    return len(schema_findings(workflow))


def measure_size(rollouts: int, concurrency: int) -> dict[str, Any]:
    from pipelines.compile import compile_config
    from pipelines.validate import check_manifests, default_schema_path

    config = scale_config(rollouts, concurrency)
    started = time.perf_counter()
    docs = compile_config(config)
    findings = check_manifests(docs, default_schema_path())  # as `compile --check`: None would skip the schema
    compile_s = time.perf_counter() - started
    items = fan_out_list(config, rollouts)
    nodes = node_status(docs, items)
    raw = json.dumps(nodes, separators=(",", ":")).encode()
    compressed = base64.b64encode(gzip.compress(raw, compresslevel=6))
    fan_out_bytes = len(json.dumps(items, separators=(",", ":")))
    return {
        "rollouts": rollouts,
        "concurrency": concurrency,
        "findings": len(findings),
        "status_schema_findings": _checked_status(nodes),
        "compile_and_check_s": round(compile_s, 2),
        "manifest_bytes": {d["kind"]: len(json.dumps(d)) for d in docs},
        "fan_out_bytes": fan_out_bytes,
        "node_status_bytes": len(raw),
        "compressed_node_status_bytes": len(compressed),
        "bytes_per_rollout": round(len(raw) / len(items)),
    }


def measure_sidecar(starts: int) -> dict[str, float]:
    """The recording proxy as a rollout pod runs it: seconds from exec to healthy, and resident memory."""
    from components.core.services import free_port, openforge_argv, wait_healthy

    ready, rss = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(starts):
            port = free_port()
            argv = openforge_argv("proxy", "--upstream", f"http://127.0.0.1:{free_port()}", "--out", tmp, "--port", str(port))
            began = time.perf_counter()
            process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
            try:
                wait_healthy(f"http://127.0.0.1:{port}/health", 60)
                ready.append(time.perf_counter() - began)
                status = Path(f"/proc/{process.pid}/status").read_text()
                rss.append(int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))) / 1024)
            finally:
                process.kill()
                process.wait()
    return {"starts": starts, "load": round(os.getloadavg()[0], 2), "ready_s_median": statistics.median(ready), "ready_s_max": max(ready), "rss_mib_median": statistics.median(rss)}


def _kb(n: int) -> str:
    return f"{n / 1000:,.0f} kB"


def section(raw: dict) -> str:
    """The doc section, from the stored result (``RESULT``) alone."""
    sizes, sidecar = raw["sizes"], raw["sidecar"]
    lines = [
        f"## {SECTION}",
        "",
        f"Command: `{raw['command']}`, at commit {raw['commit']}. Date: {raw['date']}. "
        f"Machine: {raw['machine']}; load average {raw['load']}. Rendered from `benchmarks/results/scale-plan.json`.",
        "",
        f"One iteration of `examples/cluster.yaml` with N/{SAMPLES} tasks x {SAMPLES} samples (N rollouts), "
        "all N running at once (`rollout.concurrency` N). *Checks*: the findings of every check "
        "`openforge compile --check` runs. *Node status*: the workflow's `status.nodes` once every rollout "
        "has finished, as Argo records them (a Retry node and its Pod node per rollout, since the rollout "
        "template has a retryStrategy; the fan-out list as prepare's output and generate's input), built "
        "from the compiled templates and checked against Argo's strict schema (*status findings*); "
        "*compressed* is what Argo writes to `status.compressedNodes` (gzip, then base64).",
        "",
        "| rollouts N | checks' findings | compile + check s | WorkflowTemplate | fan-out list | node status | compressed | per rollout | status findings |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in sizes:
        lines.append(
            f"| {s['rollouts']:,} | {s['findings']} | {s['compile_and_check_s']} | {_kb(s['manifest_bytes']['WorkflowTemplate'])} "
            f"| {_kb(s['fan_out_bytes'])} | {_kb(s['node_status_bytes'])} | {_kb(s['compressed_node_status_bytes'])} "
            f"| {s['bytes_per_rollout']:,} B | {s['status_schema_findings']} |"
        )
    lines += ["", "- The manifests do not grow with N (the rollouts are one `withParam` task); only `parallelism` changes."]
    for s in sizes:
        share = s["compressed_node_status_bytes"] / ETCD_LIMIT
        lines.append(
            f"- N = {s['rollouts']:,}: the compressed node status is {share:.0%} of Argo's {_kb(ETCD_LIMIT)} ceiling"
            + (" on its own: node-status offloading must be on." if share >= 0.5 else ".")
        )
    lines += [
        f"- Recording proxy sidecar, {sidecar['starts']} starts: healthy after {sidecar['ready_s_median']:.2f} s "
        f"(median; max {sidecar['ready_s_max']:.2f} s), {sidecar['rss_mib_median']:.0f} MiB resident when idle "
        f"(load average {sidecar['load']:.1f} on the {raw['cores']} cores while measured).",
        "",
    ]
    return "\n".join(lines)


def measure(command: str, starts: int) -> dict:
    """Every figure the section shows, with the command, date, commit, machine and load around the run."""
    date, commit, load_before = now_text(), commit_text(), os.getloadavg()[0]
    measure_size(SIZES[0], SIZES[0])  # imports and schema loading, kept out of the timed compile
    sizes = [measure_size(n, n) for n in SIZES]
    for s in sizes:
        print(json.dumps(s), flush=True)
    sidecar = measure_sidecar(starts)
    print(json.dumps(sidecar), flush=True)
    load = f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    return {"command": command, "date": date, "commit": commit, "machine": machine_summary(), "cores": os.cpu_count(),
            "load": load, "sizes": sizes, "sidecar": sidecar}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=5, help="Sidecar starts to time.")
    parser.add_argument("--no-doc", action="store_true", help="Print the figures; store nothing, leave docs/scale.md alone.")
    parser.add_argument("--render", action="store_true", help="Rewrite the section from the stored result only.")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.render:
        if not RESULT.exists():
            sys.exit(f"no stored result at {RESULT}: run make bench-scale-plan first")
        write_section(SECTION, section(json.loads(RESULT.read_text())), SCALE_DOC)
        print(f"wrote {SCALE_DOC} from {RESULT}", flush=True)
        return
    raw = measure(" ".join([".venv/bin/python", "benchmarks/bench_scale_plan.py", *argv]), args.starts)
    if any(s["findings"] or s["status_schema_findings"] for s in raw["sizes"]):
        sys.exit("an iteration failed a check: see the findings above")
    if not args.no_doc:
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(json.dumps(raw, indent=1) + "\n")
        write_section(SECTION, section(raw), SCALE_DOC)
        print(f"wrote {RESULT} and {SCALE_DOC}", flush=True)


if __name__ == "__main__":
    main()
