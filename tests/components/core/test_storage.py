"""The artifact store behaves the same on a folder and on a real S3 protocol server."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.core.storage import RunLayout, StorageError, get_dir, open_store, put_dir


@pytest.fixture
def store(any_store):
    return any_store


def test_put_get_exists_list(store) -> None:
    store.put_bytes("exp/a/one.json", b"1")
    store.put_bytes("exp/a/two.json", b"2")
    store.put_bytes("exp/b.json", b"3")
    assert store.get_bytes("exp/a/two.json") == b"2"
    assert store.exists("exp/a/one.json") and not store.exists("exp/a/three.json")
    assert store.list("exp/a") == ["exp/a/one.json", "exp/a/two.json"]


def test_children_are_one_level_under_a_folder(store) -> None:
    for key in ("exp/iterations/0/plan.json", "exp/iterations/0/rollouts/r/trajectory.jsonl", "exp/iterations/12/plan.json",
                "exp/state.json", "other/state.json"):  # fmt: skip
        store.put_bytes(key, b"{}")
    assert store.children("") == ["exp", "other"]
    assert store.children("exp") == store.children("exp/") == ["iterations", "state.json"]
    assert store.children("exp/iterations") == ["0", "12"]
    assert store.children("exp/iterations/0/rollouts/r") == ["trajectory.jsonl"]
    assert store.children("missing") == [] and store.children("exp/state.json") == []


def test_overwrite_is_idempotent(store) -> None:
    store.put_bytes("exp/x", b"first")
    store.put_bytes("exp/x", b"second")
    assert store.get_bytes("exp/x") == b"second"
    assert store.list("exp") == ["exp/x"]


def test_missing_key_names_it(store) -> None:
    with pytest.raises(StorageError, match="exp/none does not exist"):
        store.get_bytes("exp/none")


@pytest.mark.parametrize("key", ["../etc/passwd", "/abs", "a//b", "a/./b", ""])
def test_traversal_keys_are_refused(store, key: str) -> None:
    with pytest.raises(StorageError, match="invalid object key"):
        store.put_bytes(key, b"x")


def test_dir_round_trip(store, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("a")
    (src / "sub" / "b.txt").write_text("b")
    put_dir(store, "exp/tasks/t1", src)
    got = get_dir(store, "exp/tasks/t1", tmp_path / "dst")
    assert sorted(p.relative_to(tmp_path / "dst").as_posix() for p in got) == ["a.txt", "sub/b.txt"]
    assert (tmp_path / "dst" / "sub" / "b.txt").read_text() == "b"


def test_layout_keys_are_deterministic() -> None:
    layout = RunLayout("quickstart")
    assert layout.outcome(2, "t-s1") == "quickstart/iterations/2/outcomes/t-s1.json"
    assert layout.checkpoint_marker(3) == "quickstart/checkpoints/00003/COMMITTED"


def test_unsupported_uri() -> None:
    with pytest.raises(StorageError, match="unsupported storage URI"):
        open_store("gs://bucket/x")
