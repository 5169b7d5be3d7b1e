// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: flow steering rules (ibv_create_flow), which steer
 * Ethernet frames to raw packet QPs (docs/device-spec.md 8.18).  The
 * kernel turns the specs into the device's rule and refuses, with
 * EOPNOTSUPP, what the device cannot match; nothing of a rule lives here.
 */
#include <errno.h>
#include <stdlib.h>

#include "uzura.h"

struct ibv_flow *uzura_create_flow(struct ibv_qp *qp,
				   struct ibv_flow_attr *flow_attr)
{
	struct ibv_flow *flow;
	int ret;

	if (!(to_uctx(qp->context)->caps & UZ_CAP_RAW)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	flow = calloc(1, sizeof(*flow));
	if (!flow) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_create_flow(qp, flow, flow_attr, NULL, 0);
	if (ret) {
		free(flow);
		errno = ret;
		return NULL;
	}
	return flow;
}

int uzura_destroy_flow(struct ibv_flow *flow)
{
	int ret;

	ret = ibv_cmd_destroy_flow(flow);
	if (ret)
		return ret;
	free(flow);
	return 0;
}
