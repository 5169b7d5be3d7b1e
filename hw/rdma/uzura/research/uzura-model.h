/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the timing model's parameters and state (spec 8.20).
 * With model=on every stage of a frame's way has a modeled duration in
 * QEMU's virtual clock; with model-sync=on two nodes, each run with
 * -icount, keep their virtual clocks in lockstep across the link.
 */
#ifndef HW_RDMA_UZURA_MODEL_H
#define HW_RDMA_UZURA_MODEL_H

#include "qemu/queue.h"
#include "qemu/thread.h"
#include "qemu/timer.h"

typedef struct UzuraModelFrame UzuraModelFrame;

#define UZ_MODEL_QUEUE_MAX      4096    /* frames waiting each way */
#define UZ_MODEL_QUEUE_BYTES_MAX (16u << 20) /* and their bytes */
#define UZ_MODEL_STAGE_MAX_NS   10000000u  /* 10 ms, any one stage */
#define UZ_MODEL_PS_MAX         1000000u   /* 1 us per byte */
#define UZ_MODEL_QUANTUM_MIN_NS 100     /* the shortest lockstep */
#define UZ_MODEL_WAIT_MAX_MS    10000   /* for the peer, then unsync */
#define UZ_MODEL_AHEAD_MAX_NS   1000000000ll   /* a stamp's, at most */

/* The stage durations, device properties; defaults: the UZURA paper's. */
typedef struct UzuraModelParams {
    uint32_t doorbell_ns;       /* doorbell write to the NIC starting */
    uint32_t dma_rd_ns;         /* host -> NIC DMA: fixed part */
    uint32_t dma_rd_ps;         /*   and picoseconds per byte */
    uint32_t xlat_hit_ns;       /* translation from the on-NIC table */
    uint32_t xlat_miss_ns;      /*   and from host memory */
    uint32_t nic_tx_ns;         /* sending NIC's processing */
    uint32_t link_ns;           /* MAC to MAC, a short frame */
    uint32_t link_mbps;         /* the wire's rate: frames' spacing */
    uint32_t nic_rx_ns;         /* receiving NIC's processing */
    uint32_t dma_wr_ns;         /* NIC -> host DMA: fixed part */
    uint32_t dma_wr_ps;         /*   and picoseconds per byte */
} UzuraModelParams;

/* Frames held until their time, bounded in count and in bytes. */
typedef struct UzuraModelQueue {
    QSIMPLEQ_HEAD(, UzuraModelFrame) head;
    uint32_t frames;
    size_t bytes;
} UzuraModelQueue;

typedef struct UzuraModel {
    bool on;                    /* the model property */
    UzuraModelParams p;

    /* The pipeline: when each serial resource is next free. */
    int64_t dma_rd_free;
    int64_t wire_free;
    int64_t rx_free;
    uint64_t xlat_hits_seen;
    uint64_t xlat_misses_seen;

    QEMUTimer *kick;            /* the data path, at modeled times */
    QEMUTimer *tx_timer;        /* unsynchronised: frames until arrival */
    QEMUTimer *rx_timer;        /* frames until their data is in memory */
    UzuraModelQueue txq;
    UzuraModelQueue rxq;

    /* Lockstep with the peer (model-sync). */
    bool engaged;
    bool marked;                /* our mark for the barrier is sent */
    bool peer_on;               /* the peer is engaged too */
    bool has_stamp;             /* the next frame's arrival is known */
    bool in_poll;
    bool wait_queued;           /* the vCPU's wait at the barrier */
    bool warned;                /* of a peer with another quantum */
    int64_t epoch;              /* our virtual time at engagement */
    int64_t quantum;
    int64_t barrier;            /* virtual time we may not pass yet */
    int64_t peer_mark;          /* the peer passed this, from its epoch */
    int64_t stamp;              /* the next frame's, from the peer's */
    uint8_t stamp_src[6];       /* the MAC that sent the stamp */
    int64_t wait_since;         /* realtime ms since we wait, or 0 */
    QEMUTimerListGroup sync_tlg;    /* never run: its deadline gates */
    QEMUTimer sync_timer;           /* the vCPUs at the barrier */
    QemuCond cond;

    /* Read-only properties. */
    uint64_t quanta;            /* barriers passed */
    uint64_t late;              /* frames that arrived after their time */
    uint64_t drops;             /* full queues, or no receive buffer */
    uint64_t bad;               /* control frames out of range, ignored */
} UzuraModel;

#endif /* HW_RDMA_UZURA_MODEL_H */
