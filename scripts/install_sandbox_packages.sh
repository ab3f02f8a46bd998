#!/usr/bin/env bash
# What `openforge run --runtime sandbox` needs (pipelines/executor/_isolation.py): bubblewrap
# for each container's file system and namespaces; unshare, nsenter and setpriv come with
# util-linux. A no-op when they are there. `make test` runs this before its background apt
# installs start, so the sandbox tests find bwrap when they are collected.
set -euo pipefail
source "$(dirname "$0")/_apt_install.sh"

need() { command -v "$1" >/dev/null 2>&1; }
if need bwrap && need unshare && need nsenter && need setpriv; then
  exit 0
fi

apt_install bubblewrap util-linux
