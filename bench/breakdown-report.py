#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The report of bench/experiment breakdown:
#
#   breakdown-report.py RUNDIR   from RUNDIR/trace-node1.log,
#                                trace-node2.log, logs/client.log and
#                                meta.txt: RUNDIR/points.csv, table.txt
#                                (also printed), plot.gp, breakdown.png
#
# The trace logs are QEMU's log trace backend with -msg timestamp=on
# ("PID@SECONDS.MICROSECONDS:EVENT ARGS"): both QEMU processes stamp with
# the host's clock, so times compare across the two nodes.  Each SEND of
# ib_send_lat from node 1 to node 2 is followed through five stages:
#
#   doorbell    node 1's SQ doorbell (uzura_db_write) to its requester
#               starting the WQE (uzura_req_start)
#   build+send  to the frame handed to the link (uzura_roce_tx)
#   link        to node 2's NIC taking it from the link (uzura_roce_rx)
#   receive     to the receive CQE written (uzura_cq_post)
#   guest       to node 2's next SQ doorbell: its guest polled the CQE
#               and posted the reply
import csv
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt, gnuplot, png_head, read_meta, run_line, write_table  # noqa: E402

LINE = re.compile(r"^\d+@(\d+\.\d+):(uzura_\w+) (.*)$")
SQ_KIND = 7             # UzuraDbKind's UZ_DBK_SQ
SEND_ONLY = (0x04, 0x05)  # BTH SEND Only (with immediate)
WR_SEND = (0x00, 0x01)    # UZ_WR_SEND, UZ_WR_SEND_IMM
WC_RECV = 0x80
STAGES = ["doorbell", "build+send", "link", "receive", "guest"]


def parse(path):
    ev = []
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line.strip())
            if not m:
                continue
            args = dict(re.findall(r"(\w+) (0x[0-9a-f]+|\d+)", m.group(3)))
            ev.append((float(m.group(1)) * 1e6, m.group(2),
                       {k: int(v, 0) for k, v in args.items()}))
    ev.sort(key=lambda e: e[0])
    return ev


def last_before(ev, t, name, **want):
    best = None
    for e in ev:
        if e[0] > t:
            break
        if e[1] == name and all(e[2].get(k) == v for k, v in want.items()):
            best = e
    return best


def first_after(ev, t, name, **want):
    for e in ev:
        if e[0] >= t and e[1] == name and \
                all(e[2].get(k) == v for k, v in want.items()):
            return e
    return None


def follow(n1, n2):
    """Stage durations (us) of each node-1-to-node-2 SEND."""
    rx = {}
    for e in n2:
        if e[1] == "uzura_roce_rx" and e[2].get("opcode") in SEND_ONLY:
            rx.setdefault((e[2]["dqpn"], e[2]["psn"]), e)
    out = []
    for e in n1:
        if e[1] != "uzura_roce_tx" or e[2].get("opcode") not in SEND_ONLY:
            continue
        dqpn, psn = e[2]["dqpn"], e[2]["psn"]
        r = rx.get((dqpn, psn))
        start = None
        for opc in WR_SEND:
            s = last_before(n1, e[0], "uzura_req_start", psn=psn, opcode=opc)
            if s and (start is None or s[0] > start[0]):
                start = s
        if not r or not start:
            continue
        db = last_before(n1, start[0], "uzura_db_write", kind=SQ_KIND,
                         index=start[2]["qpn"])
        cqe = first_after(n2, r[0], "uzura_cq_post", qpn=dqpn, opcode=WC_RECV)
        nxt = cqe and first_after(n2, cqe[0], "uzura_db_write", kind=SQ_KIND,
                                  index=dqpn)
        if not db or not cqe or not nxt:
            continue
        out.append([start[0] - db[0], e[0] - start[0], r[0] - e[0],
                    cqe[0] - r[0], nxt[0] - cqe[0]])
    return out


def main():
    rundir = sys.argv[1]
    meta = read_meta(rundir)
    n1 = parse(os.path.join(rundir, "trace-node1.log"))
    n2 = parse(os.path.join(rundir, "trace-node2.log"))
    msgs = follow(n1, n2)
    msgs = msgs[len(msgs) // 10:]       # the first tenth warms up
    if not msgs:
        sys.exit("breakdown-report.py: no message could be followed")
    lat = None
    try:
        with open(os.path.join(rundir, "logs", "client.log")) as f:
            for line in f:
                p = line.split()
                if len(p) >= 5 and p[0] == "2" and p[1].isdigit():
                    lat = (float(p[2]), float(p[4]))   # t_min, t_typical
    except OSError:
        pass
    with open(os.path.join(rundir, "points.csv"), "w") as f:
        wr = csv.writer(f)
        wr.writerow(["msg"] + STAGES)
        for i, m in enumerate(msgs):
            wr.writerow([i] + ["%.1f" % x for x in m])
    cols = list(zip(*msgs))
    med = [statistics.median(c) for c in cols]
    p90 = [sorted(c)[int(0.9 * (len(c) - 1))] for c in cols]
    mn = [min(c) for c in cols]
    out = []
    w = out.append
    w("Where one ib_send_lat message's time goes, node 1 to node 2 "
      "(%s)" % run_line(meta))
    w("%d messages followed; microseconds of host time" % len(msgs))
    w("")
    w("stage           median      p90      min   share of the median sum")
    tot = sum(med)
    for s, a, b, c in zip(STAGES, med, p90, mn):
        w("%-12s %s %s %s   %5.1f %%" % (s, fmt(a), fmt(b), fmt(c),
                                         100 * a / tot if tot else 0))
    w("%-12s %s" % ("sum", fmt(tot)))
    if lat:
        w("")
        w("ib_send_lat, the same run: t_min %.2f us, t_typical %.2f us "
          "(one way)" % lat)
    write_table(rundir, out)

    dat = os.path.join(rundir, "plot.dat")
    with open(dat, "w") as f:
        f.write("# stage median p90 min\n")
        for i, s in enumerate(STAGES):
            f.write('"%s" %.3f %.3f %.3f\n' % (s, med[i], p90[i], mn[i]))
    png = os.path.join(rundir, "breakdown.png")
    gp = os.path.join(rundir, "plot.gp")
    with open(gp, "w") as f:
        f.write("# Written by bench/breakdown-report.py; run with gnuplot.\n")
        f.write(png_head(png, 450, "title 'One SEND: from its doorbell to "
                         "the next doorbell at the receiver (%s)'"
                         % meta.get("date", "")))
        f.write("set style data histograms\nset style histogram clustered\n"
                "set style fill solid 0.8 border -1\nset grid ytics\n"
                "set logscale y\nset yrange [0.5:*]\nset tmargin 3\nset ylabel 'us of host time'\n"
                "set key top left opaque box\n"
                "plot '%s' u 2:xtic(1) t 'median', '' u 3 t '90th "
                "percentile', '' u 4 t 'minimum'\n" % dat)
        f.write("unset multiplot\n")
    gnuplot(gp, png)


if __name__ == "__main__":
    main()
