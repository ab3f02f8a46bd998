#!/usr/bin/env bash
# Debian packages of the GUI environments (components/environments): Chromium for the
# browser, Xvfb, openbox, xdotool and x11-utils for the desktop, xterm for its tests.
# A no-op when every program is there.
#
# `make test` runs this in the background before the podman image build, which uses apt
# too (scripts/_apt_install.sh waits for dpkg's lock).
set -euo pipefail
source "$(dirname "$0")/_apt_install.sh"

need() { command -v "$1" >/dev/null 2>&1; }
if [ -x /usr/bin/chromium ] && need chromedriver && need Xvfb && need openbox && need xdotool && need xprop && need xterm; then
  exit 0
fi

apt_install chromium chromium-driver xvfb openbox xdotool x11-utils xterm
