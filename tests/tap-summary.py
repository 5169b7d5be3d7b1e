#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tap-summary.py [--sanitizers] LOGBASE... : make check's last line.
#
# Each LOGBASE is what one `meson test --logbase` wrote (LOGBASE.json,
# one line per suite, and LOGBASE.junit.xml, one case per TAP line).
# Every TAP result counts as one test, as each suite reports them; a
# suite that died or timed out with no failed result counts as one
# failure more, and so does, when --sanitizers comes just before its
# LOGBASE, a suite whose output holds a sanitizer report.
# Prints each failure, then "N passed, N failed"; exits 1 on a failure.

import json
import re
import sys
import xml.etree.ElementTree as et

GOOD = {'OK', 'SKIP', 'EXPECTEDFAIL'}
# What tests/sanitizers.sh's san_reports looks for.
REPORT = re.compile(r'runtime error:|ERROR: (Address|Leak|UndefinedBehavior)'
                    r'Sanitizer|deadly signal')


def summarise(logbase, sanitizers):
    passed = failed = 0
    suites = {}
    for suite in et.parse(logbase + '.junit.xml').getroot().iter('testsuite'):
        suites[suite.get('name')] = suite
    with open(logbase + '.json', encoding='utf-8') as f:
        runs = [json.loads(line) for line in f if line.strip()]
    for run in runs:
        name = run['name']
        suite = next((s for n, s in suites.items()
                      if n.endswith('.' + name)), None)
        bad = 0
        for case in suite.iter('testcase') if suite is not None else ():
            if case.find('failure') is not None or \
               case.find('error') is not None:
                print(f'not ok - {name}: {case.get("name")}')
                bad += 1
            else:
                passed += 1
        if run['result'] not in GOOD and not bad:
            print(f'not ok - {name}: {run["result"]} '
                  f'(exit status {run["returncode"]})')
            bad = 1
        out = run.get('stdout', '') + run.get('stderr', '')
        if sanitizers and REPORT.search(out):
            print(f'not ok - {name}: sanitizer report')
            bad += 1
        failed += bad
    return passed, failed


def main(args):
    passed = failed = 0
    sanitizers = False
    for arg in args:
        if arg == '--sanitizers':
            sanitizers = True
            continue
        p, f = summarise(arg, sanitizers)
        passed += p
        failed += f
        sanitizers = False
    print(f'{passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
