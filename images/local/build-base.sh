#!/usr/bin/env bash
# Build the local images the `podman` runtime runs (`make podman-base`): idempotent, cached.
#
# No registry is reachable from this kind of machine, so nothing is pulled: the base is a
# Debian root file system made with debootstrap from the machine's own apt source and
# imported with `podman import`; images/local/Containerfile then layers the runtime on it.
# Every step is skipped when its result exists, so a second run takes about a second.
set -euo pipefail

BASE=${OPENFORGE_PODMAN_BASE:-localhost/openforge/base:bookworm}
LOCAL=${OPENFORGE_PODMAN_IMAGE:-localhost/openforge/local:0.1.0}
HERE=$(cd "$(dirname "$0")" && pwd)

need() { command -v "$1" >/dev/null 2>&1; }

if ! need podman || ! need debootstrap || ! need runc; then
  apt-get update -qq
  # Waits for dpkg's lock: `make test` installs the GUI packages at the same time.
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq podman debootstrap runc >/dev/null
fi

# The two settings podman needs on this kind of machine (docs/executor.md, "The `podman`
# runtime"): the default ulimits exceed what the sandbox grants, and crun cannot start
# containers here.
CONF=/etc/containers/containers.conf
if ! grep -qs '^runtime = "runc"' "$CONF"; then
  mkdir -p /etc/containers
  cat >>"$CONF" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
CONF
fi

if ! podman image exists "$BASE"; then
  # The machine's own Debian source (its first `URIs:` or `deb` line), never a fixed host.
  MIRROR=$( (grep -hsoE '^(URIs:|deb) +[^ ]+' /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list || true) | head -1 | awk '{print $2}')
  ROOTFS=$(mktemp -d /var/tmp/openforge-rootfs.XXXXXX)
  trap 'rm -rf "$ROOTFS"' EXIT
  # python3: the images' own interpreter (the package's pure-Python code and the
  # checkout's cp311 wheels run on it); ca-certificates for HTTPS harnesses.
  debootstrap --variant=minbase --include=python3,ca-certificates bookworm "$ROOTFS" "$MIRROR" >/dev/null
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
  tar -C "$ROOTFS" -c . | podman import --quiet - "$BASE" >/dev/null
fi

if ! podman image exists "$LOCAL"; then
  podman build --quiet --build-arg BASE="$BASE" -t "$LOCAL" -f "$HERE/Containerfile" "$HERE" >/dev/null
fi
echo "$LOCAL"
