#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# tap-wrap.sh SUITE [ARGS...]: run a suite for meson's TAP reader.  A
# suite lets its tools' output through (perftest's tables, the
# launcher's progress); each such line becomes a TAP comment, so that
# meson reads only the results and the plan.  The exit status is the
# suite's.
set -o pipefail
"$@" | sed -u -E '/^(ok |not ok |ok$|not ok$|1\.\.|#|TAP version |Bail out!)/!s/^/# /'
