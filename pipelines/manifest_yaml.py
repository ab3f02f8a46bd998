"""Compiled manifests as YAML text with stable bytes: the same dict always gives the same text.

Kept apart from ``compile.py`` so that importing the compiler's CLI (``openforge --help``)
does not load yaml.
"""

from __future__ import annotations

from typing import Any

import yaml


class _ManifestDumper(yaml.SafeDumper):
    """Block style throughout; multi-line strings (the embedded config) as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_ManifestDumper.add_representer(str, _represent_str)


def dump_manifest(doc: dict[str, Any]) -> str:
    """One manifest as YAML text; the same dict always gives the same text."""
    return yaml.dump(doc, Dumper=_ManifestDumper, sort_keys=False, default_flow_style=False, width=120)
