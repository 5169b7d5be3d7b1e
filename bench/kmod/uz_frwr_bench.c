// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uz_frwr_bench: the cost of kernel fast registration (FRWR) on an RDMA
 * device, for the FRRWP experiment (docs/experiments/frrwp.md).
 *
 * Loading the module runs the measurement and leaves the figures in
 * /sys/module/uz_frwr_bench/parameters/results (and in the kernel log);
 * the module holds nothing afterwards and is removed with rmmod.
 *
 * For P = 1, 2, 4 .. 128 pages of a kernel buffer, `iters` times each:
 *   reg    ib_map_mr_sg of the P pages into an MR from ib_alloc_mr, then a
 *          signaled IB_WR_REG_MR, until its completion is polled;
 *   inval  a signaled IB_WR_LOCAL_INV of the new key, until its completion.
 * Both run on an RC QP connected to itself, as a ULP (NFS/RDMA, iSER)
 * registers before each I/O.  Output, after a header line, one line per
 * P (nanoseconds of ktime_get_ns):
 *   kfastreg,PAGES,ITERS,REG_MEDIAN,REG_MEAN,REG_MIN,INV_MEDIAN,INV_MEAN,INV_MIN
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/timekeeping.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#define UZB_MAX_PAGES	128
#define UZB_WARMUP	3
#define UZB_MAX_ITERS	10000

static char *ibdev = "uzura0";
module_param(ibdev, charp, 0444);
MODULE_PARM_DESC(ibdev, "RDMA device to measure (default uzura0)");

static uint port = 1;
module_param(port, uint, 0444);
MODULE_PARM_DESC(port, "port of the device (default 1)");

static uint gid_index = 1;
module_param(gid_index, uint, 0444);
MODULE_PARM_DESC(gid_index, "GID index the loopback QP uses (default 1)");

static uint iters = 200;
module_param(iters, uint, 0444);
MODULE_PARM_DESC(iters, "registrations per page count, 1..10000 (default 200)");

static uint timeout_ms = 1000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "wait for one completion, 1..60000 ms (default 1000)");

/* The CSV the measurement wrote; readers may come while it runs. */
static DEFINE_MUTEX(uzb_results_lock);
static char uzb_results[2048];
static size_t uzb_results_len;

static int uzb_results_get(char *buf, const struct kernel_param *kp)
{
	int n;

	mutex_lock(&uzb_results_lock);
	n = sysfs_emit(buf, "%s", uzb_results);
	mutex_unlock(&uzb_results_lock);
	return n;
}

static int uzb_results_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops uzb_results_ops = {
	.get = uzb_results_get,
	.set = uzb_results_set,
};
module_param_cb(results, &uzb_results_ops, NULL, 0444);
MODULE_PARM_DESC(results, "the figures, as CSV (read only)");

enum { UZB_WR_REG = 1, UZB_WR_INV };

struct uzb {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	struct ib_mr *mr;
	struct page *pages[UZB_MAX_PAGES];
	struct scatterlist sg[UZB_MAX_PAGES];
	u64 *reg_ns;
	u64 *inv_ns;
};

static __printf(1, 2) void uzb_add(const char *fmt, ...)
{
	va_list ap;

	mutex_lock(&uzb_results_lock);
	va_start(ap, fmt);
	uzb_results_len += vscnprintf(uzb_results + uzb_results_len,
				      sizeof(uzb_results) - uzb_results_len,
				      fmt, ap);
	va_end(ap);
	mutex_unlock(&uzb_results_lock);
}

/* Poll for the completion of WR @id, at most timeout_ms: never hang. */
static int uzb_wait(struct uzb *b, u64 id)
{
	u64 deadline = ktime_get_ns() + (u64)timeout_ms * NSEC_PER_MSEC;
	struct ib_wc wc;
	int n;

	while (!(n = ib_poll_cq(b->cq, 1, &wc))) {
		if (ktime_get_ns() > deadline) {
			pr_err("no completion for WR %llu in %u ms\n", id,
			       timeout_ms);
			return -ETIMEDOUT;
		}
		cpu_relax();
	}
	if (n < 0) {
		pr_err("polling the CQ failed: %d\n", n);
		return n;
	}
	if (wc.status != IB_WC_SUCCESS || wc.wr_id != id) {
		pr_err("WR %llu: completion of WR %llu, %s\n", id, wc.wr_id,
		       ib_wc_status_msg(wc.status));
		return -EIO;
	}
	return 0;
}

/* One registration of the @nents mapped entries and its invalidation. */
static int uzb_one(struct uzb *b, int nents, u64 *reg_ns, u64 *inv_ns)
{
	struct ib_reg_wr reg = {
		.wr = {
			.wr_id = UZB_WR_REG,
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
		},
		.mr = b->mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
			  IB_ACCESS_REMOTE_WRITE,
	};
	struct ib_send_wr inv = {
		.wr_id = UZB_WR_INV,
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
	};
	u64 t0, t1;
	int n, err;

	/* A new key for each registration, as a ULP does. */
	ib_update_fast_reg_key(b->mr, ib_inc_rkey(b->mr->rkey));
	reg.key = b->mr->rkey;
	inv.ex.invalidate_rkey = b->mr->rkey;

	t0 = ktime_get_ns();
	n = ib_map_mr_sg(b->mr, b->sg, nents, NULL, PAGE_SIZE);
	if (n != nents) {
		pr_err("ib_map_mr_sg mapped %d of %d entries\n", n, nents);
		return n < 0 ? n : -EINVAL;
	}
	err = ib_post_send(b->qp, &reg.wr, NULL);
	if (err) {
		pr_err("posting REG_MR failed: %d\n", err);
		return err;
	}
	err = uzb_wait(b, UZB_WR_REG);
	if (err)
		return err;
	t1 = ktime_get_ns();
	*reg_ns = t1 - t0;

	err = ib_post_send(b->qp, &inv, NULL);
	if (err) {
		pr_err("posting LOCAL_INV failed: %d\n", err);
		return err;
	}
	err = uzb_wait(b, UZB_WR_INV);
	if (err)
		return err;
	*inv_ns = ktime_get_ns() - t1;
	return 0;
}

static int uzb_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Sort t[0..n) and return its median; *mean gets the mean. */
static u64 uzb_median(u64 *t, uint n, u64 *mean)
{
	u64 sum = 0;
	uint i;

	for (i = 0; i < n; i++)
		sum += t[i];
	*mean = div_u64(sum, n);
	sort(t, n, sizeof(*t), uzb_cmp, NULL);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* @p pages, iters times, then one line of figures. */
static int uzb_pages(struct uzb *b, uint p)
{
	u64 reg_med, reg_mean, inv_med, inv_mean, reg, inv;
	int nents, i, err = 0;
	uint j;

	sg_init_table(b->sg, p);
	for (j = 0; j < p; j++)
		sg_set_page(&b->sg[j], b->pages[j], PAGE_SIZE, 0);
	nents = ib_dma_map_sg(b->dev, b->sg, p, DMA_BIDIRECTIONAL);
	if (!nents)
		return -ENOMEM;
	for (i = -UZB_WARMUP; i < (int)iters; i++) {
		err = uzb_one(b, nents, &reg, &inv);
		if (err)
			break;
		if (i >= 0) {
			b->reg_ns[i] = reg;
			b->inv_ns[i] = inv;
		}
		cond_resched();
	}
	ib_dma_unmap_sg(b->dev, b->sg, p, DMA_BIDIRECTIONAL);
	if (err)
		return err;

	reg_med = uzb_median(b->reg_ns, iters, &reg_mean);
	inv_med = uzb_median(b->inv_ns, iters, &inv_mean);
	pr_info("kfastreg,%u,%u,%llu,%llu,%llu,%llu,%llu,%llu\n", p, iters,
		reg_med, reg_mean, b->reg_ns[0], inv_med, inv_mean,
		b->inv_ns[0]);
	uzb_add("kfastreg,%u,%u,%llu,%llu,%llu,%llu,%llu,%llu\n", p, iters,
		reg_med, reg_mean, b->reg_ns[0], inv_med, inv_mean,
		b->inv_ns[0]);
	return 0;
}

/* The QP to itself: INIT, RTR with its own QPN and GID, RTS. */
static int uzb_connect(struct uzb *b)
{
	const struct ib_gid_attr *gid;
	struct ib_port_attr pattr;
	struct ib_qp_attr attr = {};
	union ib_gid dgid;
	u8 mac[ETH_ALEN];
	u16 vlan;
	int err;

	err = ib_query_port(b->dev, port, &pattr);
	if (err) {
		pr_err("cannot query port %u: %d\n", port, err);
		return err;
	}
	gid = rdma_get_gid_attr(b->dev, port, gid_index);
	if (IS_ERR(gid)) {
		pr_err("no GID %u on port %u\n", gid_index, port);
		return PTR_ERR(gid);
	}
	/* Kernel users hand ib_modify_qp a resolved address: our own MAC. */
	err = rdma_read_gid_l2_fields(gid, &vlan, mac);
	if (err) {
		pr_err("GID %u has no MAC address: %d\n", gid_index, err);
		goto out;
	}
	pr_info("%s port %u GID %u %pI6 (type %d), QP %u to itself\n",
		ibdev, port, gid_index, gid->gid.raw, gid->gid_type,
		b->qp->qp_num);

	attr.qp_state = IB_QPS_INIT;
	attr.port_num = port;
	attr.qp_access_flags = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE;
	err = ib_modify_qp(b->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err) {
		pr_err("QP to INIT: %d\n", err);
		goto out;
	}

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = pattr.active_mtu;
	attr.dest_qp_num = b->qp->qp_num;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = rdma_ah_find_type(b->dev, port);
	rdma_ah_set_port_num(&attr.ah_attr, port);
	dgid = gid->gid;
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, gid_index, 64, 0);
	ether_addr_copy(attr.ah_attr.roce.dmac, mac);
	err = ib_modify_qp(b->qp, &attr, IB_QP_STATE | IB_QP_AV |
			   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err) {
		pr_err("QP to RTR: %d\n", err);
		goto out;
	}

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	err = ib_modify_qp(b->qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			   IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			   IB_QP_MAX_QP_RD_ATOMIC);
	if (err)
		pr_err("QP to RTS: %d\n", err);
out:
	rdma_put_gid_attr(gid);
	return err;
}

static int uzb_run(struct uzb *b)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	uint p;
	int err;

	if (!(b->dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    b->dev->attrs.max_fast_reg_page_list_len < UZB_MAX_PAGES) {
		pr_err("%s has no fast registration of %u pages\n", ibdev,
		       UZB_MAX_PAGES);
		return -EOPNOTSUPP;
	}
	b->pd = ib_alloc_pd(b->dev, 0);
	if (IS_ERR(b->pd)) {
		err = PTR_ERR(b->pd);
		pr_err("ib_alloc_pd: %d\n", err);
		return err;
	}
	b->cq = ib_alloc_cq(b->dev, NULL, 8, 0, IB_POLL_DIRECT);
	if (IS_ERR(b->cq)) {
		err = PTR_ERR(b->cq);
		pr_err("ib_alloc_cq: %d\n", err);
		goto err_pd;
	}
	init.send_cq = b->cq;
	init.recv_cq = b->cq;
	b->mr = ib_alloc_mr(b->pd, IB_MR_TYPE_MEM_REG, UZB_MAX_PAGES);
	if (IS_ERR(b->mr)) {
		err = PTR_ERR(b->mr);
		pr_err("ib_alloc_mr: %d\n", err);
		goto err_cq;
	}
	b->qp = ib_create_qp(b->pd, &init);
	if (IS_ERR(b->qp)) {
		err = PTR_ERR(b->qp);
		pr_err("ib_create_qp: %d\n", err);
		goto err_mr;
	}
	err = uzb_connect(b);
	if (err)
		goto err_qp;

	uzb_add("kfastreg,pages,iters,reg_median_ns,reg_mean_ns,reg_min_ns,inv_median_ns,inv_mean_ns,inv_min_ns\n");
	for (p = 1; p <= UZB_MAX_PAGES; p *= 2) {
		err = uzb_pages(b, p);
		if (err)
			break;
	}

	/* The QP first: after a timeout a REG_MR may still be queued. */
err_qp:
	ib_destroy_qp(b->qp);
err_mr:
	ib_dereg_mr(b->mr);
err_cq:
	ib_free_cq(b->cq);
err_pd:
	ib_dealloc_pd(b->pd);
	return err;
}

static int __init uzb_init(void)
{
	struct uzb *b;
	int i, err;

	if (!iters || iters > UZB_MAX_ITERS || !timeout_ms ||
	    timeout_ms > 60000) {
		pr_err("iters takes 1..%u, timeout_ms 1..60000\n",
		       UZB_MAX_ITERS);
		return -EINVAL;
	}
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->reg_ns = kvcalloc(iters, sizeof(u64), GFP_KERNEL);
	b->inv_ns = kvcalloc(iters, sizeof(u64), GFP_KERNEL);
	err = -ENOMEM;
	if (!b->reg_ns || !b->inv_ns)
		goto err_free;
	for (i = 0; i < UZB_MAX_PAGES; i++) {
		b->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!b->pages[i])
			goto err_free;
	}
	b->dev = ib_device_get_by_name(ibdev, RDMA_DRIVER_UNKNOWN);
	if (!b->dev) {
		pr_err("no RDMA device %s\n", ibdev);
		err = -ENODEV;
		goto err_free;
	}
	err = uzb_run(b);
	ib_device_put(b->dev);
err_free:
	for (i = 0; i < UZB_MAX_PAGES; i++)
		if (b->pages[i])
			__free_page(b->pages[i]);
	kvfree(b->inv_ns);
	kvfree(b->reg_ns);
	kfree(b);
	return err;
}

/* Nothing to undo (init freed it all), but rmmod needs an exit. */
static void __exit uzb_exit(void)
{
}

module_init(uzb_init);
module_exit(uzb_exit);

MODULE_DESCRIPTION("uzura benchmark: kernel fast registration cost");
MODULE_LICENSE("GPL");
