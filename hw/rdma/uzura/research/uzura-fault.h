/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: the fault injector's settings and state (spec 7.5):
 * random faults on transmit, rules that aim a fault at chosen frames in
 * either direction (uzura-fault-rule.c), and link flaps.
 */
#ifndef HW_RDMA_UZURA_FAULT_H
#define HW_RDMA_UZURA_FAULT_H

#include "qemu/queue.h"

typedef struct QEMUTimer QEMUTimer;
typedef struct UzuraFaultFrame UzuraFaultFrame;
typedef QTAILQ_HEAD(UzuraFaultList, UzuraFaultFrame) UzuraFaultList;

#define UZ_FAULT_DELAY_MAX_US   1000000
#define UZ_FAULT_QUEUE_MAX      4096    /* frames waiting, then drops */
#define UZ_FAULT_HELD_BYTES_MAX (32u << 20) /* and all they hold */
#define UZ_FAULT_RULES_MAX      64
#define UZ_FAULT_RULES_TEXT_MAX 16384   /* bytes of the fault-rules text */
#define UZ_FAULT_REORDER_MAX    64      /* frames a held one waits for */
#define UZ_FAULT_DUP_MAX        16      /* extra copies of one frame */
#define UZ_FAULT_FLAP_MAX_US    3600000000u
/* Frames released in one turn of the main loop; the rest in the next. */
#define UZ_FAULT_RELEASE_BUDGET 64

typedef enum UzuraFaultAct {
    UZ_FA_DROP,
    UZ_FA_DUP,
    UZ_FA_DELAY,
    UZ_FA_CORRUPT,
    UZ_FA_REORDER,
    UZ_FA_CE,                   /* marked CE, as a congested switch does */
} UzuraFaultAct;

/* What corrupt=FIELD changes: one bit of it. */
typedef enum UzuraFaultField {
    UZ_FF_BIT,                  /* anywhere in the frame, ICRC left */
    UZ_FF_ICRC,
    UZ_FF_IP,                   /* the IPv4 header checksum */
    UZ_FF_OPCODE,               /* these with a new ICRC */
    UZ_FF_QPN,
    UZ_FF_PSN,
    UZ_FF_SYNDROME,
    UZ_FF_RKEY,
    UZ_FF_PAYLOAD,
    UZ_FF_NUM,
} UzuraFaultField;

/* Frame kinds a rule may name (kind=...). */
#define UZ_FK_ETH       (1u << 0)   /* not RoCE */
#define UZ_FK_ROCE      (1u << 1)
#define UZ_FK_REQUEST   (1u << 2)
#define UZ_FK_RESPONSE  (1u << 3)   /* READ responses, atomic ACKs */
#define UZ_FK_ACK       (1u << 4)
#define UZ_FK_NAK       (1u << 5)   /* NAKs and RNR NAKs */
#define UZ_FK_STCRW     (1u << 6)

typedef struct UzuraFaultRule {
    /* match */
    bool rx;                    /* dir=rx: frames received */
    uint8_t kinds;              /* UZ_FK_*, 0 = any */
    int16_t opcode;             /* -1 = any */
    int64_t qpn;                /* destination QP, -1 = any */
    int64_t psn_lo, psn_hi;     /* -1 = any */
    uint64_t nth;               /* acts from the nth match on (1-based) */
    uint64_t count;             /* on at most this many frames, 0 = all */
    double prob;
    /* act */
    uint8_t act;                /* UzuraFaultAct */
    uint8_t field;              /* corrupt: UzuraFaultField */
    uint32_t arg;               /* dup: copies, delay: us, reorder: K */
    /* counted */
    uint64_t matched;
    uint64_t acted;
} UzuraFaultRule;

/* Frames a direction holds back: reordered ones, and delayed by a rule. */
typedef struct UzuraFaultPipe {
    UzuraFaultList timed;       /* by due time */
    UzuraFaultList held;        /* in the order held */
    uint32_t frames;
} UzuraFaultPipe;

typedef struct UzuraFault {
    double drop;                /* probabilities per frame, 0..1 */
    double dup;
    double reorder;
    double corrupt;
    uint32_t delay_us;          /* every frame, microseconds */
    uint64_t seed;
    uint64_t rng;
    UzuraFaultList queue;       /* delayed by delay_us, in order */
    uint32_t queued;            /* frames in the queue */
    size_t held_bytes;          /* frames held anywhere, and headers */
    UzuraFaultPipe pipe[2];     /* [0] transmit, [1] receive */
    UzuraFaultRule *rules;
    uint32_t nrules;
    uint32_t nrules_rx;
    QEMUTimer *timer;
    QEMUBH *more;               /* releases due frames past the budget */
    bool releasing;             /* in the release: arm at its end */
    /* link flaps: down for flap_down_us, every flap_period_us (0: once) */
    uint32_t flap_down_us;
    uint32_t flap_period_us;
    int64_t flap_next;          /* virtual clock of the next change */
    QEMUTimer *flap_timer;
} UzuraFault;

/* uzura-fault.c */
bool uzura_fault_roll(UzuraFault *f, double p);

/* uzura-fault-rule.c */
UzuraFaultRule *uzura_fault_rules_parse(const char *text, uint32_t *n,
                                        char **why);
char *uzura_fault_rules_print(const UzuraFaultRule *rules, uint32_t n,
                              bool counts);
const UzuraFaultRule *uzura_fault_rules_pick(UzuraFault *f, bool rx,
                                             const uint8_t *buf, size_t len);
void uzura_fault_corrupt(uint8_t *buf, size_t len, uint8_t field,
                         uint64_t r);

#endif /* HW_RDMA_UZURA_FAULT_H */
