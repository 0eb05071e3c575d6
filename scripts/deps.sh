#!/bin/sh
# deps.sh - install the Debian packages allocspy needs, by what it is for:
#   deps.sh build   what make compiles with (make, make demo, make install)
#   deps.sh test    that and what the tests run (make check, make check-full)
#   deps.sh bench   that and the tools make bench times against
#   deps.sh all     every one of them (make deps)
# Does nothing when every package is there. As root it installs the missing
# ones with apt-get; otherwise it prints one line naming them and exits 1.
set -eu

build="gcc g++ make pkg-config libunwind-dev libjansson-dev libdw-dev libglib2.0-dev
zlib1g-dev"
# The tests: valgrind is the reference; the others are the readers of the
# exports, the second allocators, the real programs, the linters, and tmux
# (a terminal for allocspy top).
test="$build valgrind mandoc cppcheck clang-tidy clang libclang-rt-14-dev
libgoogle-perftools-dev google-perftools libjemalloc2 sqlite3 mawk git libc6-dbg golang-go
heaptrack chromium fonts-dejavu-core strace tmux"
bench="$build hyperfine heaptrack sqlite3 libc6-dbg"

group=${1:-all}
case $group in
build) pkgs=$build ;;
test) pkgs=$test ;;
bench) pkgs=$bench ;;
all) pkgs="$test hyperfine" ;;
*) echo "deps.sh: error: $group: build, test, bench or all" >&2; exit 2 ;;
esac

missing=
for p in $pkgs; do
	case " $missing " in *" $p "*) continue ;; esac
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing="$missing $p"
done
# Node.js and npm, for the tests' npm packages: any install will do (a
# machine may have its own build, with which Debian's npm package conflicts).
if [ "$group" = test ] || [ "$group" = all ]; then
	command -v node >/dev/null 2>&1 || missing="$missing nodejs"
	command -v npm >/dev/null 2>&1 || missing="$missing npm"
fi
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: error: missing packages ($group):$missing; install them as root, or run make deps as root" >&2
	exit 1
fi
echo "deps.sh: installing ($group):$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
