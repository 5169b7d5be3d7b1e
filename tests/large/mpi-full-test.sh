#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The whole MPI suite (tests/mpi-test.sh): make check runs its core, this
# adds 3 and 4 ranks on 2 nodes, MPICH's collectives and every UCT test
# kind ucx_info lists for the uzura device.  Speaks TAP.
UZURA_TEST_FULL=1 exec "$(dirname "$0")/../mpi-test.sh"
