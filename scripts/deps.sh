#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages utrace needs to build and test (xz-utils:
# test-agent-kill-tools traces xz -T2; libbpf-dev, bpftool and clang build
# the kernel backend's BPF programs and skeletons, bpf/; libdebuginfod-dev:
# DWARF prototypes fetched by build-id from $DEBUGINFOD_URLS, cli/dwarf.c).
# As root: runs apt-get. Otherwise: prints the exact line to run, and fails
# if something is missing.
PKGS="meson ninja-build pkg-config gcc clang libclang-rt-14-dev libbpf-dev bpftool libc6-dev binutils libelf-dev libdw-dev libdebuginfod-dev libzydis-dev libzycore-dev python3 strace ltrace xz-utils scdoc"
# Used by the benchmarks and comparison tests when present (skipped otherwise).
# golang-go (about 80 MB to download): the Go target of tests/e2e/test-trace.c.
# bash-completion: tests/e2e/test-docs.c runs the bash completion.
# gawk, lua5.4: real programs whose counts test-selfcount compares across backends.
# debuginfod: the server test-dwarf fetches a stripped target's DWARF from.
# gdb, libc6-dbg: test-trace stack_without_frame_pointers compares -k with gdb's
# bt, libc's local symbols (__libc_start_call_main) named by its debug file.
OPT_PKGS="bpftrace uftrace linux-perf sqlite3 golang-go bash-completion gawk lua5.4 debuginfod gdb libc6-dbg"
# --with-deb: what tests/pkg/test-deb.sh (suite slow) needs to build the .debs.
DEB_PKGS="debhelper dpkg-dev fakeroot lintian"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ "${1:-}" = "--with-optional" ] && for p in $OPT_PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ "${1:-}" = "--with-deb" ] && for p in $DEB_PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "utrace: missing packages; run as root:" >&2
	echo "  apt-get install -y$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y $missing >/dev/null 2>&1 ||
	{ apt-get update >/dev/null 2>&1 && apt-get install -y $missing >/dev/null; } || {
	echo "utrace: apt-get install -y$missing failed" >&2
	exit 1
}
