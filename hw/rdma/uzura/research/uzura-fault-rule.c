/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * uzura RDMA NIC: fault rules (spec 7.5.2).
 *
 * A rule names the frames it applies to (direction, kind, RoCE opcode,
 * destination QP, PSN range, the Nth match, a probability) and what
 * happens to them (drop, duplicate, delay, corrupt a field, reorder).
 * Rules come as text, one per line or separated by ';', through the
 * fault-rules property; this file parses and prints that text, sorts a
 * frame into what rules can match, and corrupts a named field.
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "../uzura-core.h"
#include "../uzura-transport.h"

#define FRAME_BTH       UZ_ROCE_BTH_OFF
#define FRAME_IP        UZ_ROCE_IP_OFF

static const struct {
    const char *name;
    uint8_t op;
} uzura_op_names[] = {
    { "send-first", UZ_BTH_OP_SEND_FIRST },
    { "send-middle", UZ_BTH_OP_SEND_MIDDLE },
    { "send-last", UZ_BTH_OP_SEND_LAST },
    { "send-last-imm", UZ_BTH_OP_SEND_LAST_IMM },
    { "send-only", UZ_BTH_OP_SEND_ONLY },
    { "send-only-imm", UZ_BTH_OP_SEND_ONLY_IMM },
    { "write-first", UZ_BTH_OP_WRITE_FIRST },
    { "write-middle", UZ_BTH_OP_WRITE_MIDDLE },
    { "write-last", UZ_BTH_OP_WRITE_LAST },
    { "write-last-imm", UZ_BTH_OP_WRITE_LAST_IMM },
    { "write-only", UZ_BTH_OP_WRITE_ONLY },
    { "write-only-imm", UZ_BTH_OP_WRITE_ONLY_IMM },
    { "read-request", UZ_BTH_OP_READ_REQ },
    { "read-response-first", UZ_BTH_OP_READ_RESP_FIRST },
    { "read-response-middle", UZ_BTH_OP_READ_RESP_MIDDLE },
    { "read-response-last", UZ_BTH_OP_READ_RESP_LAST },
    { "read-response-only", UZ_BTH_OP_READ_RESP_ONLY },
    { "ack", UZ_BTH_OP_ACK },
    { "atomic-ack", UZ_BTH_OP_ATOMIC_ACK },
    { "cmp-swap", UZ_BTH_OP_CMP_SWP },
    { "fetch-add", UZ_BTH_OP_FETCH_ADD },
    { "send-last-inv", UZ_BTH_OP_SEND_LAST_INV },
    { "send-only-inv", UZ_BTH_OP_SEND_ONLY_INV },
    { "flush", UZ_BTH_OP_FLUSH },
    { "atomic-write", UZ_BTH_OP_ATOMIC_WRITE },
    { "ud-send-only", UZ_BTH_OP_UD_SEND_ONLY },
    { "ud-send-only-imm", UZ_BTH_OP_UD_SEND_ONLY_IMM },
    { "stcrw", UZ_BTH_OP_RC_STCRW },
    { "sack", UZ_BTH_OP_RC_SACK },
};

static const char *const uzura_kind_names[] = {
    "eth", "roce", "request", "response", "ack", "nak", "stcrw",
};

static const char *const uzura_field_names[UZ_FF_NUM] = {
    [UZ_FF_BIT] = "bit",
    [UZ_FF_ICRC] = "icrc",
    [UZ_FF_IP] = "ip",
    [UZ_FF_OPCODE] = "opcode",
    [UZ_FF_QPN] = "qpn",
    [UZ_FF_PSN] = "psn",
    [UZ_FF_SYNDROME] = "syndrome",
    [UZ_FF_RKEY] = "rkey",
    [UZ_FF_PAYLOAD] = "payload",
};

static const char *const uzura_act_names[] = {
    [UZ_FA_DROP] = "drop",
    [UZ_FA_DUP] = "dup",
    [UZ_FA_DELAY] = "delay",
    [UZ_FA_CORRUPT] = "corrupt",
    [UZ_FA_REORDER] = "reorder",
    [UZ_FA_CE] = "ce",
};

/* What a rule can know of a frame. */
typedef struct UzuraFrameClass {
    uint8_t kinds;              /* UZ_FK_* */
    uint8_t opcode;             /* as on the wire, which rules name */
    uint8_t rc_op;              /* an XRC opcode's RC twin: its headers */
    bool xrc;
    uint32_t dqpn;
    uint32_t psn;
    size_t ip_len;              /* RoCE: IPv4 total length */
    size_t end;                 /* RoCE: where the ICRC starts */
    size_t payload;             /* RoCE: offsets in the frame */
    size_t paylen;
} UzuraFrameClass;

static void uzura_frame_classify(const uint8_t *buf, size_t len,
                                 UzuraFrameClass *c)
{
    const uint8_t *bth = buf + FRAME_BTH;
    uint16_t h;
    size_t end, hdrs;

    memset(c, 0, sizeof(*c));
    c->kinds = UZ_FK_ETH;
    if (!uzura_roce_is_roce(buf, len)) {
        return;
    }
    c->ip_len = uzura_roce_ip_len(buf, len);
    if (!c->ip_len) {
        return;
    }
    c->kinds = UZ_FK_ROCE;
    c->opcode = bth[0];
    c->rc_op = uzura_roce_rc_opcode(c->opcode, &c->xrc);
    c->dqpn = ldl_be_p(bth + 4) & UZ_PSN_MASK;
    c->psn = ldl_be_p(bth + 8) & UZ_PSN_MASK;
    h = uzura_ops[c->rc_op].hdrs;
    c->end = FRAME_IP + c->ip_len - UZ_ICRC_LEN;
    if (c->rc_op == UZ_BTH_OP_ACK) {
        /* The AETH syndrome tells an ACK from a NAK or RNR NAK. */
        if (FRAME_BTH + UZ_BTH_LEN < c->end) {
            c->kinds |= (bth[UZ_BTH_LEN] & UZ_AETH_TYPE_MASK) ?
                        UZ_FK_NAK : UZ_FK_ACK;
        }
    } else if (c->rc_op == UZ_BTH_OP_RC_SACK) {
        c->kinds |= UZ_FK_NAK;
    } else if (h & (UZ_H_REQ | UZ_H_DETH)) {
        c->kinds |= UZ_FK_REQUEST;
        if (c->opcode == UZ_BTH_OP_RC_STCRW) {
            c->kinds |= UZ_FK_STCRW;
        }
    } else if (uzura_ops[c->rc_op].family) {
        c->kinds |= UZ_FK_RESPONSE;
    }
    end = c->end - ((bth[1] >> 4) & 3);
    hdrs = FRAME_BTH + UZ_BTH_LEN + uzura_roce_hdrs_len(c->opcode);
    if ((h & UZ_H_PAYLOAD) && end > hdrs) {
        c->payload = hdrs;
        c->paylen = end - hdrs;
    }
}

/*
 * Where @field of the frame is: its offset and width in bits.  False
 * when the frame has no such field, or is too short to hold it: its
 * opcode is the sender's word, its length what is really there.
 */
static bool uzura_field_at(const UzuraFrameClass *c, uint8_t field,
                           size_t *off, unsigned *bits)
{
    uint16_t h = uzura_ops[c->rc_op].hdrs;

    *bits = 0;
    switch (field) {
    case UZ_FF_BIT:
        return true;
    case UZ_FF_PAYLOAD:
        *off = c->payload;
        return c->paylen > 0;
    case UZ_FF_ICRC:
        *off = c->end;
        *bits = 32;
        break;
    case UZ_FF_IP:
        *off = FRAME_IP + 10;   /* the header checksum */
        *bits = 16;
        break;
    case UZ_FF_OPCODE:
        *off = FRAME_BTH;
        *bits = 8;
        break;
    case UZ_FF_QPN:
        *off = FRAME_BTH + 5;
        *bits = 24;
        break;
    case UZ_FF_PSN:
        *off = FRAME_BTH + 9;
        *bits = 24;
        break;
    case UZ_FF_SYNDROME:
        /* The AETH follows the BTH in every opcode that has one. */
        if (!(h & UZ_H_AETH)) {
            return false;
        }
        *off = FRAME_BTH + UZ_BTH_LEN;
        *bits = 8;
        break;
    case UZ_FF_RKEY:
        /*
         * So do the RETH (past an XRCETH and a FETH) and AtomicETH: VA,
         * then R_Key.
         */
        if (!(h & (UZ_H_RETH | UZ_H_ATOMIC))) {
            return false;
        }
        *off = FRAME_BTH + UZ_BTH_LEN + (c->xrc ? UZ_XRCETH_LEN : 0) +
               (h & UZ_H_FETH ? 4 : 0) + 8;
        *bits = 32;
        break;
    default:
        return false;
    }
    /* Header fields must lie before the ICRC; the ICRC before the end. */
    return (c->kinds & UZ_FK_ROCE) &&
           *off + *bits / 8 <= c->end + (field == UZ_FF_ICRC ? UZ_ICRC_LEN : 0);
}

static bool uzura_rule_matches(const UzuraFaultRule *r,
                               const UzuraFrameClass *c)
{
    size_t off;
    unsigned bits;

    if (r->kinds && !(r->kinds & c->kinds)) {
        return false;
    }
    if ((r->opcode >= 0 || r->qpn >= 0 || r->psn_lo >= 0) &&
        !(c->kinds & UZ_FK_ROCE)) {
        return false;
    }
    if ((r->opcode >= 0 && r->opcode != c->opcode) ||
        (r->qpn >= 0 && r->qpn != c->dqpn) ||
        (r->psn_lo >= 0 && (c->psn < r->psn_lo || c->psn > r->psn_hi))) {
        return false;
    }
    /* A ce rule marks RoCE frames; a corrupt rule needs its field. */
    if (r->act == UZ_FA_CE) {
        return c->kinds & UZ_FK_ROCE;
    }
    return r->act != UZ_FA_CORRUPT || uzura_field_at(c, r->field, &off, &bits);
}

/*
 * The rule that acts on a frame: the first, in order, that matches it,
 * has reached its nth match, has acts left, and wins its draw.
 */
const UzuraFaultRule *uzura_fault_rules_pick(UzuraFault *f, bool rx,
                                             const uint8_t *buf, size_t len)
{
    UzuraFrameClass c;
    uint32_t i;

    uzura_frame_classify(buf, len, &c);
    for (i = 0; i < f->nrules; i++) {
        UzuraFaultRule *r = &f->rules[i];

        if (r->rx != rx || !uzura_rule_matches(r, &c)) {
            continue;
        }
        r->matched++;
        if (r->matched < r->nth || (r->count && r->acted >= r->count)) {
            continue;
        }
        if (r->prob < 1 && !uzura_fault_roll(f, r->prob)) {
            continue;
        }
        r->acted++;
        return r;
    }
    return NULL;
}

/* Invert bit @bit of the @bits-bit big-endian field at @p. */
static void uzura_flip(uint8_t *p, unsigned bits, uint64_t r)
{
    unsigned bit = r % bits;

    p[(bits - 1 - bit) / 8] ^= 1u << (bit % 8);
}

/*
 * Corrupt @field of a frame (a copy the caller owns).  Header fields and
 * the payload get a new ICRC, so the receiver takes the frame for what a
 * faulty sender meant; bit, icrc and ip leave a frame the receiver drops.
 */
void uzura_fault_corrupt(uint8_t *buf, size_t len, uint8_t field, uint64_t r)
{
    UzuraFrameClass c;
    size_t off;
    unsigned bits;

    uzura_frame_classify(buf, len, &c);
    if (!len) {
        return;
    }
    if (!uzura_field_at(&c, field, &off, &bits)) {
        field = UZ_FF_BIT;
    }
    switch (field) {
    case UZ_FF_BIT:
        buf[(r >> 8) % len] ^= 1u << (r & 7);
        return;
    case UZ_FF_PAYLOAD:
        buf[off + (r >> 8) % c.paylen] ^= 1u << (r & 7);
        break;
    default:
        uzura_flip(buf + off, bits, r);
        if (field == UZ_FF_ICRC || field == UZ_FF_IP) {
            return;
        }
        break;
    }
    uzura_roce_reseal(buf, len);
}

/* ---- text ---- */

static int uzura_name_index(const char *const *names, size_t n,
                            const char *s)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (names[i] && !strcmp(names[i], s)) {
            return i;
        }
    }
    return -1;
}

static bool uzura_parse_u64(const char *s, uint64_t max, uint64_t *v)
{
    return *s >= '0' && *s <= '9' && !qemu_strtou64(s, NULL, 0, v) &&
           *v <= max;
}

/* "uc-" and the name of an RC SEND or WRITE opcode: its UC twin. */
#define UZ_UC_PREFIX    "uc-"

static bool uzura_op_has_uc(uint8_t op)
{
    return op <= UZ_BTH_OP_WRITE_ONLY_IMM;
}

static bool uzura_parse_opcode(const char *s, int16_t *op)
{
    bool uc = g_str_has_prefix(s, UZ_UC_PREFIX);
    const char *name = uc ? s + strlen(UZ_UC_PREFIX) : s;
    uint64_t v;
    size_t i;

    for (i = 0; i < ARRAY_SIZE(uzura_op_names); i++) {
        if (!strcmp(uzura_op_names[i].name, name) &&
            (!uc || uzura_op_has_uc(uzura_op_names[i].op))) {
            *op = uzura_op_names[i].op | (uc ? UZ_BTH_OP_UC : 0);
            return true;
        }
    }
    if (uzura_parse_u64(s, 255, &v)) {
        *op = v;
        return true;
    }
    return false;
}

static bool uzura_parse_kinds(const char *s, uint8_t *kinds)
{
    g_auto(GStrv) names = g_strsplit(s, ",", -1);
    char **k;
    int i;

    *kinds = 0;
    for (k = names; *k; k++) {
        i = uzura_name_index(uzura_kind_names, ARRAY_SIZE(uzura_kind_names),
                             *k);
        if (i < 0) {
            return false;
        }
        *kinds |= 1u << i;
    }
    return *kinds;
}

static bool uzura_parse_psn(const char *s, UzuraFaultRule *r)
{
    g_autofree char *lo = g_strdup(s);
    char *dash = strchr(lo, '-');
    uint64_t a, b;

    if (dash) {
        *dash = 0;
    }
    if (!uzura_parse_u64(lo, UZ_PSN_MASK, &a) ||
        (dash && !uzura_parse_u64(dash + 1, UZ_PSN_MASK, &b))) {
        return false;
    }
    r->psn_lo = a;
    r->psn_hi = dash ? b : a;
    return r->psn_lo <= r->psn_hi;
}

/* An action word: NAME or NAME=ARG. */
static const char *uzura_parse_action(UzuraFaultRule *r, const char *key,
                                      const char *val)
{
    int act = uzura_name_index(uzura_act_names, ARRAY_SIZE(uzura_act_names),
                               key);
    uint64_t v = 1;
    int field;

    switch (act) {
    case UZ_FA_DROP:
        if (val) {
            return "drop takes no value";
        }
        break;
    case UZ_FA_CE:
        if (val) {
            return "ce takes no value";
        }
        break;
    case UZ_FA_DUP:
        if (val && !(uzura_parse_u64(val, UZ_FAULT_DUP_MAX, &v) && v)) {
            return "dup=N takes 1..16 extra copies";
        }
        break;
    case UZ_FA_DELAY:
        if (!val || !(uzura_parse_u64(val, UZ_FAULT_DELAY_MAX_US, &v) && v)) {
            return "delay=US takes 1..1000000 microseconds";
        }
        break;
    case UZ_FA_REORDER:
        if (val && !(uzura_parse_u64(val, UZ_FAULT_REORDER_MAX, &v) && v)) {
            return "reorder=K takes 1..64 frames";
        }
        break;
    case UZ_FA_CORRUPT:
        field = val ? uzura_name_index(uzura_field_names, UZ_FF_NUM, val) :
                UZ_FF_BIT;
        if (field < 0) {
            return "unknown field for corrupt (bit, icrc, ip, opcode, qpn, "
                   "psn, syndrome, rkey, payload)";
        }
        r->field = field;
        break;
    default:
        return NULL;
    }
    r->act = act;
    r->arg = v;
    return "";
}

/* One word of a rule; NULL when fine, or why not. */
static const char *uzura_parse_word(UzuraFaultRule *r, char *word,
                                    bool *has_act, bool *has_nth,
                                    bool *has_count)
{
    char *val = strchr(word, '=');
    const char *why;
    uint64_t v;

    if (val) {
        *val++ = 0;
    }
    why = uzura_parse_action(r, word, val);
    if (why) {
        if (*why) {
            return why;
        }
        if (*has_act) {
            return "a rule takes one action";
        }
        *has_act = true;
        return NULL;
    }
    if (!val) {
        return "unknown word (an action is drop, dup, delay, corrupt, "
               "reorder or ce)";
    }
    if (!strcmp(word, "dir")) {
        if (strcmp(val, "tx") && strcmp(val, "rx")) {
            return "dir takes tx or rx";
        }
        r->rx = !strcmp(val, "rx");
    } else if (!strcmp(word, "kind")) {
        if (!uzura_parse_kinds(val, &r->kinds)) {
            return "unknown kind (eth, roce, request, response, ack, nak, "
                   "stcrw)";
        }
    } else if (!strcmp(word, "op")) {
        if (!uzura_parse_opcode(val, &r->opcode)) {
            return "unknown opcode";
        }
    } else if (!strcmp(word, "qpn")) {
        if (!uzura_parse_u64(val, UZ_PSN_MASK, &v)) {
            return "qpn takes 0..0xffffff";
        }
        r->qpn = v;
    } else if (!strcmp(word, "psn")) {
        if (!uzura_parse_psn(val, r)) {
            return "psn takes P or P-Q with 0 <= P <= Q <= 0xffffff";
        }
    } else if (!strcmp(word, "nth")) {
        if (!uzura_parse_u64(val, UINT64_MAX, &r->nth) || !r->nth) {
            return "nth takes a number from 1";
        }
        *has_nth = true;
    } else if (!strcmp(word, "count")) {
        if (!uzura_parse_u64(val, UINT64_MAX, &r->count) || !r->count) {
            return "count takes a number from 1";
        }
        *has_count = true;
    } else if (!strcmp(word, "prob")) {
        if (qemu_strtod_finite(val, NULL, &r->prob) ||
            !(r->prob >= 0 && r->prob <= 1)) {
            return "prob takes a probability in 0..1";
        }
    } else {
        return "unknown match (dir, kind, op, qpn, psn, nth, count, prob)";
    }
    return NULL;
}

static const char *uzura_parse_rule(UzuraFaultRule *r, char *line,
                                    const char **bad)
{
    bool has_act = false, has_nth = false, has_count = false;
    char *save = NULL, *w;
    const char *why;

    *r = (UzuraFaultRule) {
        .opcode = -1, .qpn = -1, .psn_lo = -1, .psn_hi = -1,
        .nth = 1, .prob = 1,
    };
    for (w = strtok_r(line, " \t\r", &save); w;
         w = strtok_r(NULL, " \t\r", &save)) {
        size_t len = strlen(w);

        *bad = w;
        why = uzura_parse_word(r, w, &has_act, &has_nth, &has_count);
        if (why) {
            if (strlen(w) < len) {
                w[strlen(w)] = '=';     /* the whole word in the error */
            }
            return why;
        }
    }
    *bad = NULL;
    if (!has_act) {
        return "no action (drop, dup, delay, corrupt, reorder or ce)";
    }
    if (r->rx && (r->kinds & UZ_FK_ETH)) {
        return "dir=rx sees RoCE frames only: kind=eth is for dir=tx";
    }
    /* "The Nth matching frame" is that one frame unless a count says. */
    if (has_nth && !has_count) {
        r->count = 1;
    }
    return NULL;
}

/*
 * Parse rules text: one rule a line or between ';', '#' to the end of a
 * line is a comment.  Returns the rules (NULL for none) or sets @why.
 */
UzuraFaultRule *uzura_fault_rules_parse(const char *text, uint32_t *n,
                                        char **why)
{
    g_autofree char *copy = g_strdup(text);
    g_autofree UzuraFaultRule *rules = NULL;
    char *line = copy, *next, *hash;
    const char *err, *bad;
    uint32_t num = 0, lineno = 0;

    *why = NULL;
    if (strlen(text) > UZ_FAULT_RULES_TEXT_MAX) {
        *why = g_strdup_printf("at most %u bytes of rules",
                               UZ_FAULT_RULES_TEXT_MAX);
        return NULL;
    }
    for (; line; line = next) {
        next = strpbrk(line, "\n;");
        hash = strchr(line, '#');
        if (hash && (!next || hash < next)) {
            *hash = 0;
            next = next ? strchr(next, '\n') : NULL;
        }
        if (next) {
            *next++ = 0;
        }
        lineno++;
        if (!line[strspn(line, " \t\r")]) {
            continue;
        }
        if (num == UZ_FAULT_RULES_MAX) {
            *why = g_strdup_printf("at most %u rules", UZ_FAULT_RULES_MAX);
            return NULL;
        }
        rules = g_renew(UzuraFaultRule, rules, num + 1);
        err = uzura_parse_rule(&rules[num], line, &bad);
        if (err) {
            *why = bad ? g_strdup_printf("rule %u, '%s': %s", num + 1, bad,
                                         err) :
                         g_strdup_printf("rule %u: %s", num + 1, err);
            return NULL;
        }
        num++;
    }
    *n = num;
    return g_steal_pointer(&rules);
}

static const char *uzura_op_name(uint8_t op)
{
    size_t i;

    for (i = 0; i < ARRAY_SIZE(uzura_op_names); i++) {
        if (uzura_op_names[i].op == op) {
            return uzura_op_names[i].name;
        }
    }
    return NULL;
}

static void uzura_print_rule(GString *s, const UzuraFaultRule *r)
{
    const char *name;
    size_t i;

    g_string_append_printf(s, "dir=%s", r->rx ? "rx" : "tx");
    if (r->kinds) {
        g_string_append(s, " kind=");
        for (i = 0; i < ARRAY_SIZE(uzura_kind_names); i++) {
            if (r->kinds & (1u << i)) {
                g_string_append_printf(s, "%s,", uzura_kind_names[i]);
            }
        }
        g_string_truncate(s, s->len - 1);
    }
    if (r->opcode >= 0) {
        bool uc = (r->opcode & UZ_BTH_OP_UC) &&
                  uzura_op_has_uc(r->opcode & ~UZ_BTH_OP_UC);

        name = uzura_op_name(uc ? r->opcode & ~UZ_BTH_OP_UC : r->opcode);
        if (name) {
            g_string_append_printf(s, " op=%s%s", uc ? UZ_UC_PREFIX : "",
                                   name);
        } else {
            g_string_append_printf(s, " op=0x%02x", (unsigned)r->opcode);
        }
    }
    if (r->qpn >= 0) {
        g_string_append_printf(s, " qpn=0x%" PRIx64, r->qpn);
    }
    if (r->psn_lo >= 0) {
        g_string_append_printf(s, " psn=%" PRId64, r->psn_lo);
        if (r->psn_hi != r->psn_lo) {
            g_string_append_printf(s, "-%" PRId64, r->psn_hi);
        }
    }
    if (r->nth != 1) {
        g_string_append_printf(s, " nth=%" PRIu64, r->nth);
    }
    if (r->count) {
        g_string_append_printf(s, " count=%" PRIu64, r->count);
    }
    if (r->prob < 1) {
        /* The shortest of these that reads back as the same number. */
        char num[32];

        snprintf(num, sizeof(num), "%.15g", r->prob);
        if (strtod(num, NULL) != r->prob) {
            snprintf(num, sizeof(num), "%.17g", r->prob);
        }
        g_string_append_printf(s, " prob=%s", num);
    }
    g_string_append_printf(s, " %s", uzura_act_names[r->act]);
    if (r->act == UZ_FA_CORRUPT) {
        g_string_append_printf(s, "=%s", uzura_field_names[r->field]);
    } else if (r->act != UZ_FA_DROP && r->act != UZ_FA_CE) {
        g_string_append_printf(s, "=%u", r->arg);
    }
}

/*
 * The rules as text that parses back to them, each with its counts as a
 * comment if @counts.
 */
char *uzura_fault_rules_print(const UzuraFaultRule *rules, uint32_t n,
                              bool counts)
{
    GString *s = g_string_new(NULL);
    uint32_t i;

    for (i = 0; i < n; i++) {
        uzura_print_rule(s, &rules[i]);
        if (counts) {
            g_string_append_printf(s, "  # matched %" PRIu64 ", acted %"
                                   PRIu64, rules[i].matched, rules[i].acted);
        }
        g_string_append_c(s, '\n');
    }
    return g_string_free(s, false);
}
