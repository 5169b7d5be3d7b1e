#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make check (make check-large: --large) with meson's test runner, which
# runs each TAP suite, reads it and counts: the host project's unit tests
# and style checks (build/host, meson.build), the uzura qtests with QEMU's
# own meson (build/qemu-san), then the host project's suites that take
# the whole host, one at a time.  The last line, from tests/tap-summary.py,
# counts every TAP result:
#   N passed, N failed
# Meson's logs are build/host/meson-logs/ and build/qemu-san/meson-logs/
# (check-*.txt, .json, .junit.xml); the cluster suites keep theirs in
# build/test-logs/.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
host=$top/build/host
san=$top/build/qemu-san
mkdir -p "$top/build/test-logs"
logs=()

# suites DIR LOGBASE MESON-TEST-ARGS...: run them, keep the log's name.
suites() {
	local dir=$1 base=$2
	shift 2
	meson test -C "$dir" --no-rebuild --print-errorlogs --logbase "$base" "$@"
	logs+=("$dir/meson-logs/$base")
}

if [ "${1:-}" = --large ]; then
	suites "$host" check-large --suite large
	exec "$top/tests/tap-summary.py" "${logs[@]}"
fi

suites "$host" check-unit --suite unit --suite lint
# The qtests against the sanitizer build (AddressSanitizer and UBSan): a
# report stops QEMU, and any report in a suite's output fails it.
(. "$top/tests/sanitizers.sh" &&
	exec meson test -C "$san" --no-rebuild --print-errorlogs \
		--logbase check-qtest 'qtest-x86_64/uzura-*')
logs+=(--sanitizers "$san/meson-logs/check-qtest")
suites "$host" check-host --suite host --suite cluster
exec "$top/tests/tap-summary.py" "${logs[@]}"
