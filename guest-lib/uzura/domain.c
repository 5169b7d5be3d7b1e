// SPDX-License-Identifier: GPL-2.0-or-later OR BSD-2-Clause
/*
 * uzura provider: protection, thread and parent domains.
 *
 * A parent domain is a PD to the kernel (it carries its PD's handle) and
 * a set of hints to the provider: a thread domain, custom allocators and
 * a context pointer.  The kernel allocates every ring of this device, so
 * the allocators are kept but never called, and a thread domain takes no
 * lock away.  Domains count their users, as in mlx5: a PD with parent
 * domains, a thread domain in a parent domain and a parent domain with
 * QPs, SRQs or CQs on it are busy (EBUSY).
 */
#include <errno.h>
#include <stdlib.h>

#include "uzura.h"

#define UZ_PARENT_DOMAIN_MASK	(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | \
				 IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)

struct ibv_pd *uzura_alloc_pd(struct ibv_context *context)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct uzura_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	ret = ibv_cmd_alloc_pd(context, &pd->ibpd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return &pd->ibpd;
}

/*
 * A PD of this kernel context, through an imported context: the provider
 * keeps nothing but the handle, which the kernel checks at each use.
 */
struct ibv_pd *uzura_import_pd(struct ibv_context *context,
			       uint32_t pd_handle)
{
	struct uzura_pd *pd;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = context;
	pd->ibpd.handle = pd_handle;
	return &pd->ibpd;
}

/* The kernel's PD stays, its owner's to free. */
void uzura_unimport_pd(struct ibv_pd *ibpd)
{
	free(to_upd(ibpd));
}

int uzura_dealloc_pd(struct ibv_pd *ibpd)
{
	struct uzura_pd *pd = to_upd(ibpd);
	int ret;

	if (atomic_load(&pd->users))
		return EBUSY;
	if (pd->protection) {
		atomic_fetch_sub(&pd->protection->users, 1);
		if (pd->td)
			atomic_fetch_sub(&pd->td->users, 1);
		free(pd);
		return 0;
	}
	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;
	free(pd);
	return 0;
}

struct ibv_td *uzura_alloc_td(struct ibv_context *context,
			      struct ibv_td_init_attr *attr)
{
	struct uzura_td *td;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td)
		return NULL;
	td->ibtd.context = context;
	return &td->ibtd;
}

int uzura_dealloc_td(struct ibv_td *ibtd)
{
	struct uzura_td *td = to_utd(ibtd);

	if (atomic_load(&td->users))
		return EBUSY;
	free(td);
	return 0;
}

struct ibv_pd *
uzura_alloc_parent_domain(struct ibv_context *context,
			  struct ibv_parent_domain_init_attr *attr)
{
	struct uzura_pd *pd, *protection;

	if (ibv_check_alloc_parent_domain(attr))
		return NULL;
	protection = to_upd(attr->pd);
	/* A parent domain holds a PD of this context, not another parent. */
	if (attr->comp_mask & ~UZ_PARENT_DOMAIN_MASK ||
	    attr->pd->context != context || protection->protection ||
	    (attr->td && attr->td->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	ibv_initialize_parent_domain(&pd->ibpd, attr->pd);
	pd->protection = protection;
	atomic_fetch_add(&protection->users, 1);
	if (attr->td) {
		pd->td = to_utd(attr->td);
		atomic_fetch_add(&pd->td->users, 1);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	return &pd->ibpd;
}

/* An object created on @ibpd: a parent domain counts it. */
void uzura_pd_get(struct ibv_pd *ibpd)
{
	if (ibpd && to_upd(ibpd)->protection)
		atomic_fetch_add(&to_upd(ibpd)->users, 1);
}

void uzura_pd_put(struct ibv_pd *ibpd)
{
	if (ibpd && to_upd(ibpd)->protection)
		atomic_fetch_sub(&to_upd(ibpd)->users, 1);
}

bool uzura_is_parent_domain(struct ibv_pd *ibpd)
{
	return ibpd && to_upd(ibpd)->protection;
}
