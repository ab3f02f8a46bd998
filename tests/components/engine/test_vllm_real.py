"""The upstream contract the proxy and the serve step rely on, against real vLLM (its CPU build).

One vLLM serves the whole session (``vllm_engine``, tests/conftest.py): started with the
serve step's command line on a committed checkpoint and admitted by its gate.
"""

from __future__ import annotations

import httpx
import pytest
from tests.conftest import VLLM_POLICY_VERSION

pytestmark = pytest.mark.slow


def test_models_reports_the_staged_version_folder_as_root(vllm_engine):
    cards = httpx.get(f"{vllm_engine.url}/v1/models", timeout=30).json()["data"]

    assert [(card["id"], card["root"], card["owned_by"]) for card in cards] == [("policy", VLLM_POLICY_VERSION, "vllm")]
    assert vllm_engine.version == VLLM_POLICY_VERSION
