"""Fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.e2e._gui_runs import GuiRun, gui_run


@pytest.fixture(scope="session")
def gui_vl_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Callable[[str, pytest.FixtureRequest], GuiRun]:
    """``gui_vl_run(example_name, request)``: the one-iteration GUI run of ``examples/<name>.yaml``
    with the tiny vision-language policy, shared by every test (and xdist worker) that asks."""
    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    return lambda example_name, request: gui_run(example_name, request, shared)
