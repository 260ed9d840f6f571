#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Sums the TAP results of a meson test run (BUILD/meson-logs/testlog.json)
# and prints the plain line "N passed, N failed, N skipped" that CI reads.
# A test binary that failed without reporting any TAP failure (crash,
# timeout, bad plan) counts as one failure.
import json, re, sys

build = sys.argv[1] if len(sys.argv) > 1 else 'build'
passed = failed = skipped = 0
try:
    lines = open(build + '/meson-logs/testlog.json').read().splitlines()
except OSError as e:
    print('summary: %s' % e, file=sys.stderr)
    print('0 passed, 1 failed')
    sys.exit(1)
for line in lines:
    t = json.loads(line)
    p = f = s = 0
    for l in (t.get('stdout') or '').splitlines():
        if re.match(r'^ok\b', l):
            if re.search(r'#\s*SKIP', l, re.I):
                s += 1
            else:
                p += 1
        elif re.match(r'^not ok\b', l):
            f += 1
    if t.get('result') not in ('OK', 'SKIP', 'EXPECTEDFAIL') and f == 0:
        f = 1
        print('summary: %s: %s without a TAP failure line' % (t['name'], t.get('result')),
              file=sys.stderr)
    if t.get('result') == 'SKIP' and p + f + s == 0:
        s = 1
    passed += p
    failed += f
    skipped += s
print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
sys.exit(1 if failed else 0)
