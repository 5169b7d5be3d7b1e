#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The parser and report of bench/rate:
#
#   rate-report.py point LOG TEST SIZE QPS POSTLIST SECS CPU0 CPU1
#                       one row of points.csv from a perftest *_bw log and
#                       two CPU samples SECS seconds apart ("n1vcpu n1rest
#                       n2vcpu n2rest" in ns each)
#   rate-report.py lat LOG TEST
#                       one row of points.csv from a perftest *_lat log
#   rate-report.py report RUNDIR
#                       RUNDIR/table.txt (also printed), plot.gp, rate.png,
#                       and from mr.csv mr.gp and mr.png
#
# points.csv: test, size, qps, post_list, msg_per_s, mb_s, then host CPU
# ns per message of node 1's (sender's) and node 2's (receiver's) QEMU,
# vCPU threads and the rest (main loop); latency rows: t_min_us,
# t_median_us (perftest's typical), t_p99_us.
#
# mr.csv (bench/xlat-bench.c -b): round, msg_bytes, mr_mib, secs, writes, mb_s
# (10^6 bytes/s), then the translation-cache hits and misses of the
# sender's NIC (tx_*, its source pages) and of the receiver's (rx_*, the
# target pages) during the point.
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt, gnuplot, perftest_rows, png_head, read_meta, run_line, write_table  # noqa: E402

COLS = ["test", "size", "qps", "post_list", "msg_per_s", "mb_s",
        "node1_vcpu_ns", "node1_main_ns", "node2_vcpu_ns", "node2_main_ns",
        "t_min_us", "t_median_us", "t_p99_us"]


def point(log, test, size, qps, post_list, secs, a, b):
    text = open(log, errors="replace").read()
    for header, f in perftest_rows(text):
        if "MsgRate[Mpps]" not in header or len(f) < 5:
            continue
        rate = float(f[4]) * 1e6
        mbs = rate * int(size) / 1e6
        d = [int(y) - int(x) for x, y in zip(a.split(), b.split())]
        per = ["%.0f" % (x / (rate * float(secs))) if rate else ""
               for x in d]
        print(",".join([test, size, qps, post_list, "%.0f" % rate,
                        "%.2f" % mbs] + per + ["", "", ""]))
        return 0
    return 1


def lat(log, test):
    text = open(log, errors="replace").read()
    for header, f in perftest_rows(text):
        cols = header.split()
        if "t_typical[usec]" not in cols or "99%" not in cols:
            continue
        get = lambda n: f[cols.index(n)]  # noqa: E731
        print(",".join(["%s_lat" % test, f[0], "1", "1"] + [""] * 6 +
                       [get("t_min[usec]"), get("t_typical[usec]"),
                        get("99%")]))
        return 0
    return 1


def num(r, k):
    return float(r[k]) if r.get(k) else None


def mr_points(rows):
    """{(msg_bytes, mr_mib): (median MB/s, lowest, highest, rounds, sender
    miss %, receiver miss %, receiver misses per write)} over the rounds."""
    pts = {}
    for r in rows:
        pts.setdefault((int(r["msg_bytes"]), int(r["mr_mib"])), []).append(r)
    res = {}
    for k, rs in pts.items():
        bw = sorted(float(r["mb_s"]) for r in rs)
        n = len(bw)
        med = bw[n // 2] if n % 2 else (bw[n // 2 - 1] + bw[n // 2]) / 2
        tot = {c: sum(int(r[c]) for r in rs)
               for c in ("writes", "tx_hits", "tx_misses", "rx_hits",
                         "rx_misses")}
        pct = lambda h, m: 100.0 * m / (h + m) if h + m else None  # noqa: E731
        res[k] = (med, bw[0], bw[-1], n,
                  pct(tot["tx_hits"], tot["tx_misses"]),
                  pct(tot["rx_hits"], tot["rx_misses"]),
                  tot["rx_misses"] / tot["writes"] if tot["writes"] else None)
    return res


def mr_report(rundir, meta, w):
    """The MR sweep's table lines through @w, and mr.gp / mr.png."""
    path = os.path.join(rundir, "mr.csv")
    if not os.path.exists(path):
        return
    with open(path) as f:
        pts = mr_points(list(csv.DictReader(f)))
    if not pts:
        w("")
        w("bandwidth against MR size: no figures (logs/mr-*.log)")
        return
    entries = meta.get("xlat_cache_entries", "")
    cover = int(entries) * 4096 / 2**20 if entries.isdigit() else None
    sizes = sorted({k[0] for k in pts})
    mibs = sorted({k[1] for k in pts})
    w("")
    w("RDMA WRITE bandwidth against MR size (bench/xlat-bench.c -b): one "
      "QP, 128 in flight, -D %s, %s round(s)" % (
          meta.get("duration", "?"), meta.get("mr_rounds", "?")))
    w("of every size; each write from offset o of the sender's MR to o of "
      "the receiver's, o stepping through")
    w("the whole MR (4 KiB pages); translation cache: %s entries, covering "
      "%s MiB" % (entries or "?", "?" if cover is None else "%g" % cover))
    w("")
    w("  size  MR MiB  MB/s median  lowest  highest  vs smallest MR  "
      "miss % sender  receiver  misses/write")
    for s in sizes:
        base = next((pts[(s, m)][0] for m in mibs if (s, m) in pts), None)
        for m in mibs:
            if (s, m) not in pts:
                continue
            p = pts[(s, m)]
            w("%6d %7d %s %s %s %s %s %s %s" % (
                s, m, fmt(p[0], 12), fmt(p[1], 7), fmt(p[2], 8),
                fmt(p[0] / base if base else None, 15), fmt(p[4], 14),
                fmt(p[5], 9), fmt(p[6], 13)))
    w("(misses/write: the receiver's; a write of n pages misses n times "
      "once the MR is larger than the cache)")

    dat = os.path.join(rundir, "mr.dat")
    q = lambda x: "?" if x is None else "%.3f" % x  # noqa: E731
    with open(dat, "w") as f:
        f.write("# mr_mib, then per size: MB/s median, lowest, highest, "
                "sender miss %, receiver miss %\n")
        for m in mibs:
            vals = []
            for s in sizes:
                p = pts.get((s, m))
                vals += [q(x) for x in (p[0], p[1], p[2], p[4], p[5])] \
                    if p else ["?"] * 5
            f.write("%d %s\n" % (m, " ".join(vals)))
    png = os.path.join(rundir, "mr.png")
    gp = os.path.join(rundir, "mr.gp")
    label = lambda s: "%d KiB" % (s // 1024) if s >= 1024 else "%d B" % s  # noqa: E731
    with open(gp, "w") as f:
        f.write("# Written by bench/rate-report.py; run with gnuplot.\n")
        f.write(png_head(png, 450, "layout 1,2 title 'uzura RDMA WRITE "
                         "bandwidth against MR size (%s)'" %
                         meta.get("date", "")))
        f.write("set grid\nset logscale x 2\nset xlabel 'MR size (MiB)'\n"
                "set offsets graph 0.03, graph 0.03, 0, 0\n"
                "set key bottom left opaque box\n")
        if cover:
            f.write("set arrow from %g, graph 0 to %g, graph 1 nohead "
                    "dt 2 lc rgb 'gray40'\n"
                    "set label 'translation cache covers %g MiB' at %g, "
                    "graph 0.95 right offset -0.5,0 tc rgb 'gray40'\n" % (
                        cover, cover, cover, cover))
        f.write("set title 'bandwidth (median of the rounds, bars: lowest "
                "to highest)'\nset ylabel 'MB/s'\nset yrange [0:*]\nplot ")
        f.write(", ".join("'%s' u 1:%d:%d:%d w yerrorlines lc %d t '%s "
                          "writes'" % (dat if i == 0 else "", 2 + 5 * i,
                                       3 + 5 * i, 4 + 5 * i, i + 1, label(s))
                          for i, s in enumerate(sizes)) + "\n")
        f.write("set title 'translation cache misses'\n"
                "set ylabel 'misses, % of translations'\n"
                "set yrange [0:105]\nset key center left opaque box\nplot ")
        f.write(", ".join("'%s' u 1:%d w lp lc %d dt %d t '%s, %s'" % (
            dat if i == 0 and k == 0 else "", 5 + 5 * i + k, i + 1, k + 1,
            label(s), side)
            for i, s in enumerate(sizes)
            for k, side in enumerate(("sender", "receiver"))) + "\n")
        f.write("unset multiplot\n")
    gnuplot(gp, png)


def report(rundir):
    meta = read_meta(rundir)
    with open(os.path.join(rundir, "points.csv")) as f:
        rows = list(csv.DictReader(f))
    bw = [r for r in rows if not r["test"].endswith("_lat")]
    lats = [r for r in rows if r["test"].endswith("_lat")]
    out = []
    w = out.append
    w("uzura's message rate (%s%s)" % (
        run_line(meta), "; " + meta["nic"] if meta.get("nic") else ""))
    w("perftest ib_write_bw / ib_send_bw between two nodes, -D %s; host "
      "CPU ns per message of each QEMU process" % meta.get("duration", "?"))
    w("(sender node 1, receiver node 2; vCPU threads, and the rest: main "
      "loop and helpers)")
    w("")
    w("test    size   QPs  list  messages/s    MB/s   sender vCPU  main   "
      "receiver vCPU  main")
    for r in bw:
        w("%-6s %5s %5s %5s %s %s %s %s %s %s" % (
            r["test"], r["size"], r["qps"], r["post_list"],
            fmt(num(r, "msg_per_s"), 11), fmt(num(r, "mb_s"), 7),
            fmt(num(r, "node1_vcpu_ns"), 12), fmt(num(r, "node1_main_ns"), 6),
            fmt(num(r, "node2_vcpu_ns"), 14), fmt(num(r, "node2_main_ns"), 6)))
    if lats:
        w("")
        w("latency, 2 B (us)   min  median    p99")
        for r in lats:
            w("%-16s %s %s %s" % (r["test"], fmt(num(r, "t_min_us"), 6),
                                  fmt(num(r, "t_median_us"), 7),
                                  fmt(num(r, "t_p99_us"), 6)))
    best = max((num(r, "msg_per_s") or 0 for r in bw), default=0)
    w("")
    w("highest rate: %.0f messages/s" % best)
    mr_report(rundir, meta, w)
    write_table(rundir, out)

    # Plot: messages/s against QPs per size (write and send), and the
    # receiver's main-loop ns per message.
    sizes = sorted({int(r["size"]) for r in bw if r["post_list"] == "1"})
    qps = sorted({int(r["qps"]) for r in bw if r["post_list"] == "1"})
    dat = os.path.join(rundir, "plot.dat")
    q = lambda x: "?" if x is None else "%.1f" % x  # noqa: E731
    idx = {}
    with open(dat, "w") as f:
        f.write("# qps " + " ".join("%s-%d rate, main-ns" % (t, s)
                                    for t in ("write", "send")
                                    for s in sizes) + "\n")
        for n in qps:
            vals = []
            for t in ("write", "send"):
                for s in sizes:
                    r = next((r for r in bw if r["test"] == t and
                              int(r["size"]) == s and int(r["qps"]) == n and
                              r["post_list"] == "1"), {})
                    vals += [q(num(r, "msg_per_s")), q(num(r, "node2_main_ns"))]
            f.write("%d %s\n" % (n, " ".join(vals)))
    col = 2
    for t in ("write", "send"):
        for s in sizes:
            idx[(t, s)] = col
            col += 2
    png = os.path.join(rundir, "rate.png")
    gp = os.path.join(rundir, "plot.gp")
    with open(gp, "w") as f:
        f.write("# Written by bench/rate-report.py; run with gnuplot.\n")
        f.write(png_head(png, 450, "layout 1,2 title 'uzura message rate "
                         "(%s)'" % meta.get("date", "")))
        f.write("set grid\nset logscale x 2\nset xlabel 'QPs'\n"
                "set key top left opaque box\n")
        f.write("set title 'messages per second'\nset ylabel 'messages/s'\n"
                "set yrange [0:*]\nplot ")
        f.write(", ".join("'%s' u 1:%d w lp t '%s %d B'" % (
            dat if i == 0 else "", idx[k], k[0], k[1])
            for i, k in enumerate(sorted(idx))) + "\n")
        f.write("set title 'receiving QEMU main loop, host CPU per message'\n"
                "set ylabel 'ns per message'\nplot ")
        f.write(", ".join("'%s' u 1:%d w lp t '%s %d B'" % (
            dat if i == 0 else "", idx[k] + 1, k[0], k[1])
            for i, k in enumerate(sorted(idx))) + "\n")
        f.write("unset multiplot\n")
    gnuplot(gp, png)
    return 0


def main():
    if len(sys.argv) >= 10 and sys.argv[1] == "point":
        return point(*sys.argv[2:10])
    if len(sys.argv) == 4 and sys.argv[1] == "lat":
        return lat(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 3 and sys.argv[1] == "report":
        return report(sys.argv[2])
    sys.exit("usage: rate-report.py point LOG TEST SIZE QPS LIST SECS A B | "
             "lat LOG TEST | report RUNDIR")


if __name__ == "__main__":
    sys.exit(main())
