"""What a tool call writes, reads, runs: shell lines, file tools, the text editor, patches."""

from __future__ import annotations

from components.analytics._shell import simple_commands
from components.analytics.effects import effects, same_file, shell_command


def _flat(tool: str, arguments: dict) -> tuple[list[str], list[str], bool]:
    done = effects(tool, arguments)
    return done.writes, [r for s in done.steps for r in s.reads], any(s.runs_tests for s in done.steps)


def test_shell_redirections_write_and_readers_read_in_order() -> None:
    done = effects("shell", {"command": "echo hi > out.txt && cat out.txt 2>/dev/null | wc -l"})

    assert [(s.writes, s.reads) for s in done.steps] == [(["out.txt"], []), ([], ["out.txt"]), ([], [])]


def test_quoted_greater_than_and_error_redirects_write_nothing() -> None:
    assert _flat("shell", {"command": 'python -c "print(1 > 0)" 2> err.log'}) == ([], [], False)
    assert _flat("shell", {"command": "ls >&2; echo x > /dev/null"}) == ([], [], False)


def test_here_documents_write_their_target_and_their_body_is_not_run() -> None:
    command = "cat > app.py <<'EOF'\nimport os\nrm -rf x > y\nEOF\npython app.py"

    assert [c.name for c in simple_commands(command)] == ["cat", "python"]
    assert _flat("bash", {"command": command}) == (["app.py"], ["app.py"], False)


def test_writers_tee_sed_cp_and_scripts_run() -> None:
    assert _flat("shell", {"command": "sed -i 's/a/b/' conf.ini"})[0] == ["conf.ini"]
    assert _flat("shell", {"command": "sed 's/a/b/' conf.ini"})[0] == []  # no -i: prints, writes nothing
    assert _flat("shell", {"command": "cp a.txt b.txt; echo x | tee -a log.txt"})[0] == ["b.txt", "log.txt"]
    assert _flat("shell", {"command": "./build.sh --fast"})[1] == ["./build.sh"]


def test_test_runners_are_recognized_and_lookalikes_are_not() -> None:
    for command in (
        "pytest -q", "python -m pytest tests/", "cd app && npm test", "npm run test", "go test ./...",
        "python3 -m unittest -v", "make check", "uv run pytest -x", "npx jest", "/usr/bin/python3 -m pytest",
    ):  # fmt: skip
        assert _flat("shell", {"command": command})[2], command
    for command in ("cat test_app.py", "ls tests", "pip install pytest-cov", "grep pytest setup.cfg", "make build", "python test_app.py"):
        assert not _flat("shell", {"command": command})[2], command


def test_file_tools_by_their_arguments() -> None:
    assert _flat("Write", {"file_path": "/w/a.py", "content": "x"}) == (["/w/a.py"], [], False)
    assert _flat("Edit", {"file_path": "/w/a.py", "old_string": "x", "new_string": "y"}) == (["/w/a.py"], [], False)
    assert _flat("Read", {"file_path": "/w/a.py"}) == ([], ["/w/a.py"], False)
    assert _flat("str_replace_based_edit_tool", {"command": "create", "path": "a.py", "file_text": "x"})[0] == ["a.py"]
    assert _flat("str_replace_based_edit_tool", {"command": "view", "path": "a.py"}) == ([], ["a.py"], False)


def test_apply_patch_writes_the_files_its_envelope_names() -> None:
    patch = "*** Begin Patch\n*** Add File: new.py\n+x\n*** Update File: src/old.py\n@@\n-a\n+b\n*** End Patch"

    assert _flat("apply_patch", {"input": patch})[0] == ["new.py", "src/old.py"]
    assert _flat("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}\nEOF"})[0] == ["new.py", "src/old.py"]


def test_argv_commands_and_identity() -> None:
    assert shell_command({"command": ["bash", "-lc", "pytest -x"]}) == "pytest -x"
    assert effects("shell", {"command": "cd src && python -m pytest -x"}).identity == ("shell", "python", "pytest")
    assert effects("shell", {"command": "ls -la"}).identity == ("shell", "ls")
    assert effects("Read", {"file_path": "a"}).identity == ("Read", "a")


def test_same_file_matches_a_relative_tail_only() -> None:
    assert same_file("/workspace/hello.txt", "hello.txt")
    assert same_file("./src/a.py", "src/a.py")
    assert not same_file("/workspace/hello.txt", "ello.txt")
    assert not same_file("a/b.txt", "c/b.txt")
