#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Print the guest kernel release (e.g. 6.12.N+deb12-amd64): the newest 6.12
# headers installed on the host by setup-host.sh.  The guest boots exactly
# this kernel, so the driver built against the headers loads there.
set -euo pipefail
k=$(ls -d /usr/src/linux-headers-6.12.*-amd64 2>/dev/null |
	sed 's|.*/linux-headers-||' | grep -v -e '-rt-' -e '-cloud-' |
	sort -V | tail -n 1)
[ -n "$k" ] || { echo "kernel-version: no 6.12 headers (run make setup)" >&2; exit 1; }
echo "$k"
