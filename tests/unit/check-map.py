#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The version script and the public headers must agree: every UTRACE_API
# function is in lib/libutrace.map and every map entry is declared.
import re, sys, pathlib

src = pathlib.Path(sys.argv[1])
declared = set()
for h in (src / 'include' / 'utrace').glob('*.h'):
    text = h.read_text()
    for m in re.finditer(r'UTRACE_API\b[^;(]*?\b(utrace_\w+)\s*\(', text, re.S):
        declared.add(m.group(1))
mapped = set(re.findall(r'^\s*(utrace_\w+);', (src / 'lib' / 'libutrace.map').read_text(), re.M))
print('1..2')
missing = sorted(declared - mapped)
extra = sorted(mapped - declared)
if missing:
    print('# declared but not in libutrace.map: ' + ' '.join(missing))
print(('not ok' if missing else 'ok') + ' 1 - every UTRACE_API function is exported')
if extra:
    print('# in libutrace.map but not declared: ' + ' '.join(extra))
print(('not ok' if extra else 'ok') + ' 2 - every exported symbol is declared')
sys.exit(1 if missing or extra else 0)
