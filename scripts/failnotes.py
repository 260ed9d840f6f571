#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# After a meson test run: for each failed TAP subtest, the harness notes
# ("# ..." lines) its test printed just before its "not ok" line, so that a
# CI log says why a rare failure happened (the testlog itself is not kept).
import json, sys

build = sys.argv[1] if len(sys.argv) > 1 else 'build'
try:
    lines = open(build + '/meson-logs/testlog.json').read().splitlines()
except OSError:
    sys.exit(0)
for line in lines:
    t = json.loads(line)
    notes = []
    for l in (t.get('stdout') or '').splitlines():
        if l.startswith('#'):
            notes.append(l)
            notes = notes[-25:]
        elif l.startswith('not ok'):
            for n in notes:
                print('notes: %s: %s' % (t['name'], n[:300]))
            print('notes: %s: %s' % (t['name'], l))
            notes = []
        elif l.startswith('ok'):
            notes = []
