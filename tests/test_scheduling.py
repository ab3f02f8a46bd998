"""`make test`'s xdist scheduling (tests/_scheduling.py), on a small suite run with two workers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests._scheduling import FilesAndGroups

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[1]

CONFTEST = """
import pytest
from tests._scheduling import files_and_groups_scheduler

def pytest_xdist_make_scheduler(config, log):
    return files_and_groups_scheduler(config, log)

@pytest.fixture(scope="session")
def quickstart_store(tmp_path_factory):
    with open({made!r}, "a") as fh:
        fh.write("made\\n")
    return "store"

@pytest.fixture(scope="module")
def per_module(request):
    with open({modules!r}, "a") as fh:
        fh.write(request.module.__name__ + "\\n")
"""


def test_a_file_naming_a_shared_fixture_is_in_its_group_and_any_other_is_its_own_unit(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text("def test_one(quickstart_store): pass\n")
    (tmp_path / "test_vllm.py").write_text("def test_two(vllm_engine, make_vllm_engine): pass\n")
    (tmp_path / "test_plain.py").write_text("def test_three(make_vllm_engine, quickstart_store_path): pass\n")
    scheduler = FilesAndGroups.__new__(FilesAndGroups)  # the scope rule alone, without xdist's nodes
    scheduler._root, scheduler._groups = tmp_path, {}
    split = scheduler._split_scope
    assert split("test_user.py::test_one") == split("test_user.py::test_one[p@q]") == "quickstart_store"
    assert split("test_vllm.py::test_two") == "vllm_engine"
    assert split("test_plain.py::Case::test_three") == "test_plain.py"
    assert split("missing.py::test") == "missing.py"


@pytest.mark.timeout(120)
def test_files_sharing_a_costly_fixture_run_on_one_worker_which_makes_it_once(pytester: pytest.Pytester) -> None:
    made, modules = pytester.path / "made.log", pytester.path / "modules.log"
    pytester.makeconftest(CONFTEST.format(made=str(made), modules=str(modules)))
    # Four files use the shared fixture (one of them only in one test: the whole file goes),
    # four do not; each file's tests use a module fixture, made once if the file stays whole.
    # The users come first in collection order: as separate units xdist would start both
    # workers on them.
    pytester.makepyfile(
        test_a_user_0="def test_a1(quickstart_store, per_module): pass\ndef test_a2(per_module): pass\n",
        **{f"test_a_user_{i}": f"def test_a{i}(quickstart_store, per_module): pass\n" for i in range(1, 4)},
        **{f"test_c_plain_{i}": f"def test_c{i}_1(per_module): pass\ndef test_c{i}_2(per_module): pass\n" for i in range(4)},
    )
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadfile", "-v", "-p", "xdist", "-p", "no:cacheprovider",
        "-o", f"pythonpath={REPO}", "--import-mode=importlib",
    )  # fmt: skip

    result.assert_outcomes(passed=13)
    worker = {nodeid: gw for gw, nodeid in re.findall(r"\[(gw\d)\] \[.*?\] PASSED (\S+)", result.stdout.str())}
    assert len(worker) == 13, result.stdout.str()
    by_file: dict[str, set[str]] = {}
    for nodeid, gw in worker.items():
        by_file.setdefault(nodeid.split("::")[0], set()).add(gw)
    assert all(len(gws) == 1 for gws in by_file.values()), by_file  # files stay whole
    assert len(set().union(*(gws for f, gws in by_file.items() if "user" in f))) == 1, by_file  # the group on one worker
    assert len(set().union(*by_file.values())) == 2, by_file  # and both workers had work
    assert made.read_text().splitlines() == ["made"]
    assert sorted(modules.read_text().splitlines()) == sorted(set(modules.read_text().splitlines()))
