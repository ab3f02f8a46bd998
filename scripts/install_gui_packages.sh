#!/usr/bin/env bash
# Debian packages of the GUI environments (components/environments): Chromium for the
# browser, Xvfb, openbox, xdotool and x11-utils for the desktop, xterm for its tests.
# A no-op when every program is there.
#
# `make test` runs this in the background before the podman image build, which uses apt
# too. Both installs also wait for dpkg's lock (DPkg::Lock::Timeout) when run at once by hand; the
# package lists are refreshed only when the install cannot find a package, because
# `apt-get update` takes a lock no option makes it wait for.
set -euo pipefail

need() { command -v "$1" >/dev/null 2>&1; }
if [ -x /usr/bin/chromium ] && need chromedriver && need Xvfb && need openbox && need xdotool && need xprop && need xterm; then
  exit 0
fi

PACKAGES="chromium chromium-driver xvfb openbox xdotool x11-utils xterm"
install() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq $PACKAGES >/dev/null; }

install && exit 0
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  apt-get update -qq && break
  [ "$attempt" = 10 ] && exit 1
  sleep 6
done
install
