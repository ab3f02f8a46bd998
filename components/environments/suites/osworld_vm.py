"""What of OSWorld's VM maps onto this machine: its user's home is the rollout's workspace.

OSWorld runs each task in a VM restored from a snapshot, as ``user`` with home
``/home/user``. Here the desktop is a fresh Xvfb display on this machine (desktop.py), and
its apps, set-up commands and the verifier run in the rollout's workspace. So:

- a VM path under ``/home/user`` is the workspace path below it (``/home/user/a.txt`` is
  ``a.txt``); any other VM path is refused: nothing else of the VM exists here;
- a command's ``/home/user`` becomes ``{workspace}``, which desktop.yaml and the verifier
  fill in with the workspace's real path; a string command (or ``shell: true``) runs
  under ``sh -c``, as OSWorld's ``subprocess`` call with ``shell=True`` would;
- its program must be installed on this machine (checked when the task is written);
- the instruction names ``./a.txt`` instead of ``/home/user/a.txt``: the agent's
  terminal and apps start in the workspace.
"""

from __future__ import annotations

import re
import shutil
from pathlib import PurePosixPath

from components.environments.suites.common import SuiteError

HOME = "/home/user"
WORKSPACE = "{workspace}"  # desktop.yaml's placeholder; osworld_verify.py fills it in too
_HOME_IN_TEXT = re.compile(re.escape(HOME) + r"(?![\w.-])")  # not /home/username
PATHS_NOTE = "(Paths starting with ./ are in the folder the desktop's apps start in.)"


def workspace_path(path: str, where: str) -> str:
    """``path`` in the VM as a path in the workspace; SuiteError for one outside the home folder."""
    vm_path = PurePosixPath(path)
    if not vm_path.is_relative_to(HOME) or vm_path == PurePosixPath(HOME) or ".." in vm_path.parts:
        raise SuiteError(f"{where}: {path} is outside {HOME}, the only folder of the VM mapped here (to the workspace)")
    return vm_path.relative_to(HOME).as_posix()


def local_argv(command: list[str] | str, shell: bool, where: str) -> list[str]:
    """The command line to run here for a VM ``command``; SuiteError when its program is not installed."""
    if isinstance(command, str):
        argv = ["sh", "-c", command]
    else:
        argv = ["sh", "-c", *command] if shell else list(command)
    if not argv or not argv[0]:
        raise SuiteError(f"{where}: an empty command")
    if shutil.which(argv[0]) is None:
        raise SuiteError(
            f"{where}: {argv[0]} is not installed on this machine (OSWorld's VM image has it, this desktop has "
            "only what the host installs); install it or leave the task out"
        )
    return [_HOME_IN_TEXT.sub(WORKSPACE, arg) for arg in argv]


def local_instruction(instruction: str) -> str:
    """The instruction with VM home paths made relative to the folder the apps start in."""
    text = instruction.strip()
    local = re.sub(re.escape(HOME) + r"/", "./", text)
    local = _HOME_IN_TEXT.sub(".", local)
    return local if local == text else f"{local} {PATHS_NOTE}"
