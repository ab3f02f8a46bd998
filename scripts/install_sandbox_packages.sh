#!/usr/bin/env bash
# What `openforge run --runtime sandbox` needs (pipelines/executor/_isolation.py): bubblewrap
# for each container's file system and namespaces; unshare, nsenter and setpriv come with
# util-linux. A no-op when they are there. `make test` runs this before its background apt
# installs start, so the sandbox tests find bwrap when they are collected.
set -euo pipefail

need() { command -v "$1" >/dev/null 2>&1; }
if need bwrap && need unshare && need nsenter && need setpriv; then
  exit 0
fi

install() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq bubblewrap util-linux >/dev/null; }

install && exit 0
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  apt-get update -qq && break
  [ "$attempt" = 10 ] && exit 1
  sleep 6
done
install
