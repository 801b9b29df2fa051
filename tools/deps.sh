#!/bin/sh
# deps.sh PKG... - make sure the Debian packages are installed: installs them
# with apt-get when run as root, otherwise prints the exact command and fails.
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "deps: installing:$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq $missing >&2 && exit 0
    echo "deps: apt-get failed" >&2
    exit 1
fi
echo "deps: missing Debian packages:$missing" >&2
echo "deps: run:  sudo apt-get install -y$missing" >&2
exit 1
