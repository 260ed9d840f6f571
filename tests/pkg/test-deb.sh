#!/bin/sh
# SPDX-License-Identifier: MIT
# test-deb.sh - debian/ builds the three packages with `dpkg-buildpackage
# -us -uc -b` in a temporary copy of the source tree, and each file is in
# the right package (dpkg-deb -c): the binary, agent, man pages and
# completions in utrace, the shared library in libutrace0, the headers,
# the .so link and the .pc in libutrace-dev. Then lintian, when installed:
# no errors nor warnings. TAP; exit 77 (skip) without debhelper
# (scripts/deps.sh --with-deb installs what it needs). Suite slow: a full
# package build takes minutes.
src=${UTRACE_SOURCE_DIR:?}
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || {
	echo "1..0 # SKIP debhelper/dpkg-dev missing (scripts/deps.sh --with-deb)"
	exit 77
}
dpkg-checkbuilddeps "$src/debian/control" 2>/dev/null || {
	echo "1..0 # SKIP build dependencies missing: $(dpkg-checkbuilddeps "$src/debian/control" 2>&1)"
	exit 77
}
tmp=$(mktemp -d /tmp/utrace-deb-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $1"; }

# The copy: the tracked and untracked-but-not-ignored files, no build trees.
mkdir "$tmp/utrace"
if git -C "$src" rev-parse >/dev/null 2>&1; then
	(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) |
		tar -xf - -C "$tmp/utrace"
else
	(cd "$src" && tar --exclude='./build*' --exclude=./.git -cf - .) | tar -xf - -C "$tmp/utrace"
fi
if (cd "$tmp/utrace" && dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
	ok "dpkg-buildpackage -us -uc -b"
else
	notok "dpkg-buildpackage -us -uc -b"
	tail -40 "$tmp/build.log" | sed 's/^/# /'
	echo "1..$n"
	exit 1
fi

# has PACKAGE REGEX: a file of PACKAGE's .deb matches REGEX
has() {
	deb=$(ls "$tmp"/$1_*.deb 2>/dev/null | head -1)
	if [ -n "$deb" ] && dpkg-deb -c "$deb" | awk '{ print $6 }' | grep -Eq "$2"; then
		ok "$1 has $2"
	else
		notok "$1 has $2"
		[ -n "$deb" ] && dpkg-deb -c "$deb" | sed 's/^/# /'
	fi
}
# lacks PACKAGE REGEX: no file of PACKAGE matches
lacks() {
	deb=$(ls "$tmp"/$1_*.deb 2>/dev/null | head -1)
	if [ -n "$deb" ] && ! dpkg-deb -c "$deb" | awk '{ print $6 }' | grep -Eq "$2"; then
		ok "$1 lacks $2"
	else
		notok "$1 lacks $2"
	fi
}
has utrace '^\./usr/bin/utrace$'
has utrace '^\./usr/lib/x86_64-linux-gnu/utrace/libutrace-agent\.so$'
has utrace '^\./usr/share/man/man1/utrace\.1\.gz$'
has utrace '^\./usr/share/man/man7/utrace-module\.7\.gz$'
has utrace '^\./usr/share/bash-completion/completions/utrace$'
has utrace '^\./usr/share/zsh/vendor-completions/_utrace$'
has utrace '^\./usr/share/doc/utrace/copyright$'
lacks utrace 'libutrace\.so|/include/'
has libutrace0 '^\./usr/lib/x86_64-linux-gnu/libutrace\.so\.0\.1\.0$'
lacks libutrace0 '/include/|\.pc$|/bin/'
has libutrace-dev '^\./usr/include/utrace/utrace\.h$'
has libutrace-dev '^\./usr/include/utrace/module\.h$'
has libutrace-dev '^\./usr/lib/x86_64-linux-gnu/pkgconfig/libutrace\.pc$'
lacks libutrace-dev '/bin/|/man1/'
# the .so link is a symlink: dpkg-deb -c prints "name -> target"
deb=$(ls "$tmp"/libutrace-dev_*.deb | head -1)
if dpkg-deb -c "$deb" | grep -q './usr/lib/x86_64-linux-gnu/libutrace.so -> libutrace.so.0'; then
	ok "libutrace-dev has the libutrace.so link"
else
	notok "libutrace-dev has the libutrace.so link"
fi
# the packaged utrace runs, on the packaged library (it links libutrace.so.0)
dpkg-deb -x "$tmp"/utrace_*.deb "$tmp/root"
dpkg-deb -x "$tmp"/libutrace0_*.deb "$tmp/root"
if LD_LIBRARY_PATH="$tmp/root/usr/lib/x86_64-linux-gnu" "$tmp/root/usr/bin/utrace" --version |
	grep -q '^utrace '; then
	ok "the packaged utrace --version"
else
	notok "the packaged utrace --version"
fi

if command -v lintian >/dev/null; then
	# not even an info or pedantic tag (debian/libutrace0.symbols: its
	# version node, so new symbols need no edit there)
	if lintian -I --pedantic --fail-on error,warning,info,pedantic "$tmp"/*.changes \
		>"$tmp/lintian.log" 2>&1; then
		ok "lintian -I --pedantic: no tags"
	else
		notok "lintian -I --pedantic: no tags"
	fi
	sed 's/^/# /' "$tmp/lintian.log"
else
	n=$((n + 1))
	echo "ok $n - lintian # SKIP lintian is not installed"
fi
echo "1..$n"
[ $fail -eq 0 ]
