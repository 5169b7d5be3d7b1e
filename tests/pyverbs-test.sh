#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# rdma-core's own test suite (pyverbs, /usr/share/doc/rdma-core/tests of
# the guest image) on one node's uzura device.  The suite runs its two
# sides on one device, so the traffic goes through the NIC's loopback.
# Every test that fails or errs is not ok unless docs/rdma-core-tests.md
# lists it as a known failure, with the reason; the tests that cover the
# extended verbs (ibv_create_qp_ex and ibv_wr_*, ibv_create_cq_ex), on-
# demand paging, memory windows, parent domains, multicast, XRC,
# completion timestamps, device memory, raw packet QPs and flow rules
# must pass.
# Speaks TAP; the suite's own verbose log goes in as comments only for the
# tests that did not pass.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
known_doc=$top/docs/rdma-core-tests.md
# About 30 s of tests under TCG (docs/rdma-core-tests.md); a test that
# waits for a completion that never comes blocks forever.
suite_timeout=${UZURA_PYVERBS_TIMEOUT:-480}


# Tests that must pass, not only not fail (skip).
must_pass=(
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_send
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_send_imm
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write_imm
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_rdma_read
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_atomic_cmp_swp
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_atomic_fetch_add
	tests.test_qpex.QpExTestCase.test_qp_ex_ud_send
	tests.test_qpex.QpExTestCase.test_qp_ex_ud_send_imm
	tests.test_cqex.CqExTestCase.test_rc_traffic_cq_ex
	tests.test_cqex.CqExTestCase.test_ud_traffic_cq_ex
	tests.test_cqex.CQEXAPITest.test_create_cq_ex
	tests.test_cqex.CQEXAPITest.test_create_cq_ex_bad_flow
	# on-demand paging (device 0.9) and memory windows (device 0.8)
	tests.test_odp.OdpTestCase.test_odp_rc_traffic
	tests.test_odp.OdpTestCase.test_odp_rc_mixed_mr
	tests.test_odp.OdpTestCase.test_odp_rc_rdma_write
	tests.test_odp.OdpTestCase.test_odp_rc_rdma_read
	tests.test_odp.OdpTestCase.test_odp_rc_atomic_cmp_and_swp
	tests.test_odp.OdpTestCase.test_odp_rc_atomic_fetch_and_add
	tests.test_odp.OdpTestCase.test_odp_ud_traffic
	tests.test_odp.OdpTestCase.test_odp_sync_prefetch_rc_traffic
	tests.test_odp.OdpTestCase.test_odp_async_prefetch_rc_traffic
	tests.test_odp.OdpTestCase.test_odp_prefetch_sync_no_page_fault_rc_traffic
	tests.test_odp.OdpTestCase.test_odp_prefetch_async_no_page_fault_rc_traffic
	# huge pages (the image reserves them; IBV_ACCESS_HUGETLB)
	tests.test_odp.OdpTestCase.test_odp_rc_huge_traffic
	tests.test_odp.OdpTestCase.test_odp_rc_huge_user_addr_traffic
	tests.test_parent_domain.ParentDomainTrafficTest.test_huge_page_traffic
	tests.test_mr.MWTest.test_mw_type1
	tests.test_mr.MWTest.test_invalidate_mw_type1
	tests.test_mr.MWTest.test_mw_type2
	tests.test_mr.MWTest.test_mw_type2_invalidate_local
	tests.test_mr.MWTest.test_mw_type2_invalidate_remote
	tests.test_mr.MWTest.test_mw_type2_invalidate_dealloc
	# parent domains (the provider)
	tests.test_parent_domain.ParentDomainTrafficTest.test_without_allocators_rc_traffic
	tests.test_parent_domain.ParentDomainTrafficTest.test_default_allocators_rc_traffic
	tests.test_parent_domain.ParentDomainTrafficTest.test_mem_align_rc_traffic
	tests.test_parent_domain.ParentDomainTrafficTest.test_mem_align_ud_traffic
	tests.test_parent_domain.ParentDomainTrafficTest.test_mem_align_srq_excq_rc_traffic
	# UD multicast through the RDMA CM (device 0.11)
	tests.test_rdmacm.CMTestCase.test_rdmacm_async_multicast_traffic
	tests.test_rdmacm.CMTestCase.test_rdmacm_async_ex_multicast_traffic
	tests.test_rdmacm.CMTestCase.test_rdmacm_async_ex_leave_multicast_traffic
	# SRQ resize (device 0.12)
	tests.test_srq.SrqTestCase.test_resize_srq
	# FLUSH and ATOMIC WRITE (device 0.13)
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_atomic_write
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_flush
	tests.test_qpex.QpExTestCase.test_qp_ex_rc_flush_type_violate
	# XRC (device 0.14)
	tests.test_atomic.AtomicTest.test_xrc_atomic_fetch_and_add
	tests.test_atomic.AtomicTest.test_xrc_atomic_cmp_and_swap
	tests.test_cqex.CqExTestCase.test_xrc_traffic_cq_ex
	tests.test_odp.OdpTestCase.test_odp_xrc_traffic
	tests.test_qpex.QpExTestCase.test_qp_ex_xrc_send
	tests.test_qpex.QpExTestCase.test_qp_ex_xrc_send_imm
	tests.test_relaxed_ordering.RoTestCase.test_ro_xrc_traffic
	# completion timestamps (device 0.15): the wallclock one needs no mlx5dv
	tests.test_mlx5_timestamp.TimeStampTest.test_timestamp_real_time_rc_traffic
	# device memory (device 0.16)
	tests.test_device.DMTest.test_create_dm
	tests.test_device.DMTest.test_destroy_dm
	tests.test_device.DMTest.test_create_dm_bad_flow
	tests.test_device.DMTest.test_destroy_dm_bad_flow
	tests.test_device.DMTest.test_dm_write
	tests.test_device.DMTest.test_dm_write_bad_flow
	tests.test_device.DMTest.test_dm_read
	tests.test_device.DMTest.test_multi_process_alloc_dm
	tests.test_mr.DeviceMemoryAPITest.test_create_dm_mr
	tests.test_mr.DeviceMemoryAPITest.test_dm_bad_access
	tests.test_mr.DeviceMemoryAPITest.test_dm_bad_registration
	tests.test_mr.DeviceMemoryTest.test_dm_traffic
	tests.test_mr.DeviceMemoryTest.test_dm_remote_traffic
	tests.test_mr.DeviceMemoryTest.test_dm_remote_write_traffic_imm
	tests.test_mr.DeviceMemoryTest.test_dm_remote_read_traffic
	tests.test_mr.DeviceMemoryTest.test_dm_atomic_fetch_add
	tests.test_mr.DeviceMemoryTest.test_dm_atomic_cmp_swp
	# raw packet QPs and flow rules (device 0.17)
	tests.test_qp.QPTest.test_create_raw_qp_no_attr
	tests.test_qp.QPTest.test_create_raw_qp_with_attr
	tests.test_qp.QPTest.test_create_raw_qp_ex_no_attr
	tests.test_qp.QPTest.test_create_raw_qp_ex_with_attr
	tests.test_qp.QPTest.test_query_raw_qp
	tests.test_flow.FlowTest.test_eth_spec_flow_traffic
	tests.test_flow.FlowTest.test_ipv4_spec_flow_traffic
	tests.test_flow.FlowTest.test_ipv6_spec_flow_traffic
	tests.test_flow.FlowTest.test_udp_spec_flow_traffic
	tests.test_flow.FlowTest.test_tcp_spec_flow_traffic
	tests.test_mlx5_timestamp.TimeStampTest.test_timestamp_real_time_raw_traffic
	# implicit ODP (device 0.18)
	tests.test_odp.OdpTestCase.test_odp_implicit_rc_traffic
	tests.test_odp.OdpTestCase.test_odp_implicit_sync_prefetch_rc_traffic
	tests.test_odp.OdpTestCase.test_odp_implicit_async_prefetch_rc_traffic
	# imported contexts, PDs, MRs and DMs
	tests.test_shared_pd.SharedPDTestCase.test_imported_rc_ex_rdma_write
	tests.test_device.SharedDMTest.test_import_dm
	# tag matching (device 0.19)
	tests.test_tag_matching.TMTest.test_tm_traffic
	tests.test_tag_matching.TMTest.test_tm_unexpected_tag
	tests.test_tag_matching.TMTest.test_tm_no_tag
	tests.test_tag_matching.TMTest.test_tm_rndv
	# RSS over WQs and an indirection table (device 0.19)
	tests.test_rss_traffic.RSSTrafficTest.test_rss_traffic
)


log=$(mktemp)
results=$(mktemp)
trap 'rm -f "$log" "$results"' EXIT

# The suite, on a copy of its directory with the compressed files
# unpacked; its exit status is the one of run_tests.py (or timeout's 124).
run_suite() {
	"$uz" run 1 -- "d=$ibdev; x=$gidx
		[ -n \"\$d\" ] && [ -n \"\$x\" ] || { echo 'no uzura device or GID'; exit 1; }
		rm -rf /tmp/rdma-core-tests && cp -r /usr/share/doc/rdma-core/tests /tmp/rdma-core-tests &&
		gunzip -f /tmp/rdma-core-tests/*.gz && cd /tmp/rdma-core-tests || exit 1
		echo \"# device \$d, GID index \$x\"
		timeout $suite_timeout python3 -u run_tests.py --dev \$d --port 1 --gid \$x -v 2>&1" \
		> "$log"
}

# One line per test: ID RESULT (ok, skipped, ERROR, FAIL, ...).  The -v
# log names a test, maybe its docstring on the next line, then its result
# after " ... " (other output can come in between).
parse_results() {
	awk '
	/^test[A-Za-z0-9_]* \(tests\.[A-Za-z0-9_.]*\)/ {
		id = $2; gsub(/[()]/, "", id); done = 0
	}
	id != "" && !done {
		r = ""
		if (match($0, / \.\.\. (ok|skipped|ERROR|FAIL|expected failure|unexpected success)/))
			r = substr($0, RSTART + 5, RLENGTH - 5)
		else if (match($0, /^(ok|skipped|ERROR|FAIL|expected failure|unexpected success)( |$)/))
			r = substr($0, RSTART, RLENGTH)
		if (r != "") {
			sub(/ $/, "", r); gsub(/ /, "_", r)
			print id, r; done = 1
		}
	}' "$log"
}

# Known failures: the test IDs in the first column of the tables of
# docs/rdma-core-tests.md.
known() {
	grep -Eo '^\| *`tests\.[A-Za-z0-9_.]+`' "$known_doc" 2>/dev/null |
		grep -Eo 'tests\.[A-Za-z0-9_.]+' | grep -qx "$1"
}

"$uz" down
t "one node boots" boot -n 1

SECONDS=0
run_suite
rc=$?
elapsed=$SECONDS
grep '^# device' "$log"
parse_results > "$results"
summary=$(grep -E '^Ran [0-9]+ tests? in' "$log" | tail -n 1)
total=$(echo "$summary" | awk '{ print $2 }')
total=${total:-0}
last=$(grep -E '^(OK|FAILED)( \(|$)' "$log" | tail -n 1)
count() { echo "$last" | grep -Eo "$1=[0-9]+" | cut -d= -f2 || true; }
failed=$(count failures)
errors=$(count errors)
skipped=$(count skipped)
failed=${failed:-0} errors=${errors:-0} skipped=${skipped:-0}
passed=$((total - failed - errors - skipped))
echo "# $summary; ${elapsed}s with the copy: $last"
t "rdma-core suite ran: $total tests, $passed passed, $skipped skipped, $failed failed, $errors errors" \
	test "$total" -gt 0 -a -n "$last" -a "$rc" -ne 124
t "the suite finished within ${suite_timeout}s (took ${elapsed}s)" test "$rc" -ne 124
t "every test the suite ran has a result in its log ($(wc -l < "$results") of $total)" \
	test "$(wc -l < "$results")" -eq "$total"

# Failures and errors: known ones are ok, with their reason in the doc.
while read -r id res; do
	case $res in
	ERROR|FAIL|unexpected_success) ;;
	*) continue ;;
	esac
	if known "$id"; then
		t "$id: $res, a known failure (docs/rdma-core-tests.md)" true
	else
		# Its traceback from the suite's summary, as comments.
		awk -v id="$id" '
			/^(ERROR|FAIL): / && index($0, "(" id ")") { p = 1 }
			p && (/^=+$/ || /^Ran [0-9]+ tests? in/) { exit }
			p { print "# " $0 }' "$log"
		t "$id: $res" false
	fi
done < "$results"

for id in "${must_pass[@]}"; do
	t "$id passes" grep -qx "$id ok" "$results"
done

if [ "$fails" -gt 0 ]; then
	echo "# the suite's last lines:"
	tail -n 5 "$log" | sed 's/^/# /'
fi
"$uz" down
echo "1..$n"
[ "$fails" -eq 0 ]
