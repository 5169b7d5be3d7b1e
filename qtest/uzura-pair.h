/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura qtests: one RC QP pair between two NICs on one hub, with the
 * device's fault rules at hand, for tests that aim faults at chosen
 * frames and check how the transport repairs them.
 */
#ifndef UZURA_PAIR_H
#define UZURA_PAIR_H

#include "uzura-verbs.h"
#include "qemu/cutils.h"

#define MS                  1000000ll
#define STEP_NS             (10 * MS)       /* below the 67 ms ACK timeout */
#define MSG_LEN             3000            /* three packets at MTU 1024 */
#define PSN0                0x000100        /* first PSN of uz0's sends */

typedef struct Pair {
    UzMachine m;
    UzNode n[2];
    UzQp *qa, *qb;              /* qa on uz0 sends to qb on uz1 */
    UzMr *ma, *mb;
    uint32_t seq;
} Pair;

/* The pair on machine @p->m, started. */
void pair_init(Pair *p);

void pair_start(Pair *p);

void pair_stop(Pair *p);

QTestState *qts(Pair *p);

QDict *rules_try(Pair *p, int nic, const char *text);

void rules_set(Pair *p, int nic, const char *text);

char *rules_get(Pair *p, int nic);

/* How often rule @idx (from 1) of NIC @nic acted, from its comment. */
uint64_t rule_acted(Pair *p, int nic, int idx);

/* A fresh RC pair of QPs between the pair's nodes. */
void pair_fresh_qps(Pair *p, UzQp **a, UzQp **b);

/*
 * @wr, posted on a fresh QP of node 1, fails with @status and @verr (a
 * local WR the device refuses; the pair's own QPs stay as they were).
 */
void pair_local_fails(Pair *p, const UzWr *wr, uint8_t status,
                      uint8_t verr);

/* WRITE @len bytes of a pattern from qa to @key at @va; @status expected. */
void pair_write(Pair *p, uint32_t key, uint64_t va,
                uint32_t len, uint32_t seed, uint8_t status);

/* qom-set of a number; @ok says whether the device must take it. */
void pair_set_uint(Pair *p, int nic, const char *prop,
                   uint64_t v, bool ok);

/* qom-set of a string; @ok says whether the device must take it. */
void pair_set_str(Pair *p, int nic, const char *prop,
                  const char *v, bool ok);

/*
 * A SEND or WRITE (@op) of @len bytes from qa to qb, waited
 * for with the clock stepped as needed; the bytes must arrive intact.
 */
void exchange(Pair *p, uint8_t op, uint32_t len);

/* Counter @name of NIC @nic, as moved since @since. */
#define MOVED(p, nic, name, since) \
    (uz_counter(&(p)->m, (nic), (name)) - (since))

#endif /* UZURA_PAIR_H */
