"""A 4,096-rollout iteration compiles and passes every check, and the node status the
scale plan sizes (docs/scale.md) has Argo's shape: benchmarks/bench_scale_plan.py."""

from __future__ import annotations

import json

from benchmarks.bench_scale_plan import fan_out_list, measure_size, node_status, scale_config


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
