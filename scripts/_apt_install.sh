# Sourced by the install scripts: `apt_install PACKAGE...` installs Debian packages, waiting
# for dpkg's lock (another install may run at once: `make test` starts several in the
# background). The package lists are refreshed only when the install cannot find a package,
# and with retries, because `apt-get update` takes a lock no option makes it wait for.
apt_install() {
  _apt() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq "$@" >/dev/null; }
  _apt "$@" && return 0
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    apt-get update -qq && break
    [ "$attempt" = 10 ] && return 1
    sleep 6
  done
  _apt "$@"
}
