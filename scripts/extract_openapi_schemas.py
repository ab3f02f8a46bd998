"""Vendor the component schemas the proxy's conformance tests validate against.

A published OpenAPI spec is megabytes; the tests need a few response and event schemas
and everything they reference. This reads a spec (JSON or YAML), keeps the named root
schemas plus every ``#/components/schemas/...`` they reach, and writes them, unchanged,
with where they came from:

    python scripts/extract_openapi_schemas.py SPEC --api openai \\
        --repo openai/openai-openapi --commit <sha> --path openapi.json --license MIT

The output (``tests/fixtures/openapi/<api>.json``) keeps the spec's layout
(``components.schemas``), so every ``$ref`` resolves against the file as written.
Each committed file names, under ``x-source``, the commit it was made from.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# The objects the proxy returns, per API: its answers, its stream events (whose snapshots,
# e.g. the Response inside response.completed, they reference), and its error bodies.
ROOTS = {
    "openai": (
        "CreateChatCompletionResponse",
        "CreateChatCompletionStreamResponse",
        "Response",
        "ResponseStreamEvent",
        "ErrorResponse",
    ),
    "anthropic": ("Message", "MessageStreamEvent", "ErrorResponse"),
}
_PREFIX = "#/components/schemas/"
_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "openapi"


def _load(spec: Path) -> dict[str, Any]:
    text = spec.read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        return json.loads(text)
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _refs(node: Any) -> set[str]:
    """Names of the component schemas ``node`` references directly."""
    if isinstance(node, dict):
        found = {node["$ref"][len(_PREFIX) :]} if isinstance(node.get("$ref"), str) and node["$ref"].startswith(_PREFIX) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*map(_refs, node)) if node else set()
    return set()


def closure(schemas: dict[str, Any], roots: tuple[str, ...]) -> dict[str, Any]:
    """The root schemas and every schema they reach through ``$ref``, by name."""
    missing = [name for name in roots if name not in schemas]
    if missing:
        raise SystemExit(f"the spec has no component schema named {', '.join(missing)}; check --api or the spec file")
    kept: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in kept:
            continue
        if name not in schemas:
            raise SystemExit(f"a schema references {_PREFIX}{name}, which the spec does not define")
        kept[name] = schemas[name]
        todo.extend(_refs(schemas[name]) - kept.keys())
    return dict(sorted(kept.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", type=Path, help="the OpenAPI spec file (JSON or YAML)")
    parser.add_argument("--api", required=True, choices=sorted(ROOTS), help="which API's roots to keep")
    parser.add_argument("--repo", required=True, help="the repository the spec came from (owner/name)")
    parser.add_argument("--commit", required=True, help="that repository's commit")
    parser.add_argument("--path", required=True, help="the spec's path in that repository")
    parser.add_argument("--license", required=True, help="the spec's license, as its repository states it")
    parser.add_argument("--note", default="", help="anything else a reader must know about this source")
    parser.add_argument("--out", type=Path, default=None, help="output file (default tests/fixtures/openapi/<api>.json)")
    args = parser.parse_args()
    spec = _load(args.spec)
    roots = ROOTS[args.api]
    source = {"repository": args.repo, "commit": args.commit, "path": args.path, "license": args.license}
    if args.note:
        source["note"] = args.note
    document = {
        "x-source": source,
        "openapi": spec.get("openapi"),
        "roots": list(roots),
        "components": {"schemas": closure(spec["components"]["schemas"], roots)},
    }
    out = args.out or _OUT / f"{args.api}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1, sort_keys=False, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(document['components']['schemas'])} schemas to {out}")


if __name__ == "__main__":
    main()
