#!/bin/sh
# deps.sh - install the Debian packages allocspy builds and tests with.
# Does nothing when every package is already there.
set -eu

pkgs="gcc g++ make pkg-config libunwind-dev libjansson-dev libdw-dev
libglib2.0-dev libgoogle-perftools-dev valgrind mandoc hyperfine
cppcheck clang-tidy clang libclang-rt-14-dev libjemalloc2 sqlite3 mawk git
libc6-dbg zlib1g-dev golang-go google-perftools heaptrack chromium
fonts-dejavu-core strace"

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing="$missing $p"
done
# Node.js and npm: any install will do (a machine may have its own build,
# with which Debian's npm package conflicts).
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0

echo "deps.sh: installing:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: error: not root; install these packages:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
