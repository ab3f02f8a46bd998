"""A 4,096-rollout iteration compiles and passes every check, and the node status the
scale plan sizes (docs/scale.md) has Argo's shape: benchmarks/bench_scale_plan.py. Its
"Measured here" section is its stored result (benchmarks/results/scale-plan.json) rendered."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import bench_scale_plan
from benchmarks.bench_scale_plan import fan_out_list, measure_size, node_status, scale_config
from benchmarks.doc_sections import replace_section


def test_a_4096_rollout_iteration_compiles_and_passes_every_check() -> None:
    sized = measure_size(4096, 4096)
    assert sized["findings"] == 0
    # Argo's strict schema accepts the NodeStatus entries the sizes are measured on.
    assert sized["status_schema_findings"] == 0
    # The manifests do not grow with the rollout count (one withParam task fans out): only
    # digits differ (`parallelism`, and the config the pods carry).
    small = measure_size(512, 512)
    for kind, size in sized["manifest_bytes"].items():
        assert abs(size - small["manifest_bytes"][kind]) <= 8, kind
    assert sized["node_status_bytes"] > 7 * small["node_status_bytes"]


def test_the_status_holds_every_rollout_and_its_fan_out_list_twice() -> None:
    from pipelines.compile import compile_config

    config = scale_config(64, 64)
    items = fan_out_list(config, 64)
    assert len({item["rollout_id"] for item in items}) == 64
    nodes = node_status(compile_config(config), items)
    pods = [n for n in nodes.values() if n["type"] == "Pod" and n["templateName"] == "rollout"]
    assert sorted(p["inputs"]["parameters"][1]["value"] for p in pods) == sorted(i["rollout_id"] for i in items)
    listed = json.dumps(items, separators=(",", ":"))
    carriers = [n for n in nodes.values() if any(p.get("value") == listed for f in ("inputs", "outputs") for p in n.get(f, {}).get("parameters", []))]
    assert len(carriers) == 2


def _small_result() -> dict:
    size = {
        "rollouts": 4096, "concurrency": 4096, "findings": 0, "status_schema_findings": 0, "compile_and_check_s": 0.31,
        "manifest_bytes": {"WorkflowTemplate": 15_321}, "fan_out_bytes": 365_000, "node_status_bytes": 11_673_000,
        "compressed_node_status_bytes": 674_000, "bytes_per_rollout": 2850,
    }  # fmt: skip
    sidecar = {"starts": 5, "load": 1.5, "ready_s_median": 1.234, "ready_s_max": 2.5, "rss_mib_median": 54.6}
    return {"command": ".venv/bin/python benchmarks/bench_scale_plan.py", "date": "2026-12-07 23:10 UTC",
            "commit": "abc1234", "machine": "2 CPU cores", "cores": 2, "load": "0.5 at the start, 1.5 at the end",
            "sizes": [size], "sidecar": sidecar}  # fmt: skip


def test_the_section_shows_the_stored_figures() -> None:
    text = bench_scale_plan.section(_small_result())
    assert text.startswith(f"## {bench_scale_plan.SECTION}\n")
    assert "| 4,096 | 0 | 0.31 | 15 kB | 365 kB | 11,673 kB | 674 kB | 2,850 B | 0 |" in text
    assert "67% of Argo's 1,000 kB ceiling on its own" in text
    assert "healthy after 1.23 s (median; max 2.50 s), 55 MiB resident" in text
    assert "Rendered from `benchmarks/results/scale-plan.json`." in text


def test_the_doc_section_is_the_stored_result_rendered() -> None:
    raw = json.loads(bench_scale_plan.RESULT.read_text())
    doc = bench_scale_plan.SCALE_DOC.read_text()
    text = bench_scale_plan.section(raw)
    assert replace_section(doc, bench_scale_plan.SECTION, text) == doc, "docs/scale.md differs from the stored result rendered"
    assert raw["commit"] in text and raw["date"] in text


def test_no_doc_stores_nothing_and_render_reads_the_stored_result_only(tmp_path: Path, monkeypatch) -> None:
    doc, result = tmp_path / "scale.md", tmp_path / "scale-plan.json"
    doc.write_text("# Scale\n\n## Measured here\n\nold figures\n")
    monkeypatch.setattr(bench_scale_plan, "SCALE_DOC", doc)
    monkeypatch.setattr(bench_scale_plan, "RESULT", result)
    monkeypatch.setattr(bench_scale_plan, "measure", lambda command, starts: _small_result())
    bench_scale_plan.main(["--no-doc"])
    assert not result.exists() and "old figures" in doc.read_text()
    bench_scale_plan.main([])
    assert json.loads(result.read_text()) == _small_result()
    written = doc.read_text()
    doc.write_text("# Scale\n\n## Measured here\n\nold figures\n")
    monkeypatch.setattr(bench_scale_plan, "measure", None)  # --render must not measure
    bench_scale_plan.main(["--render"])
    assert doc.read_text() == written
