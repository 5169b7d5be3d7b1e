#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The report of bench/experiment onesided:
#
#   onesided-report.py RUNDIR   from RUNDIR/points.csv and meta.txt:
#                               RUNDIR/table.txt (also printed), plot.gp
#                               and onesided.png
#
# points.csv: transport (uzura, tcp-virtio), then bench/osc-bench.c's
# columns: test, param, origins, size, value, unit.
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt, fmt_ratio, gnuplot, png_head, read_meta, run_line, size_name, write_table  # noqa: E402,E501

TRS = [("uzura", "uzura"), ("tcp-virtio", "TCP")]
# The paper's figures for its RDMA-based design on InfiniBand (MT23108,
# PCI-X), and MPICH2's original send/receive design where it gives one.
PAPER = {
    ("latency", 4): "12.6 us (original 15.6)",
    ("put", 262144): "865 MB/s",
    ("sync", "pscw", 1): "14.78 us (original 16.52)",
    ("origins", 2): "over 920 MB/s peak (original 895)",
}


def load(rundir):
    rows = {}
    with open(os.path.join(rundir, "points.csv")) as f:
        for r in csv.DictReader(f):
            key = (r["transport"], r["test"], int(r["param"]),
                   int(r["origins"]), int(r["size"]))
            # One origin's empty epochs come from both jobs: the 2-rank
            # job's, first in the file, have no idle ranks beside them.
            rows.setdefault(key, (float(r["value"]), r["unit"]))
    return rows


def get(rows, tr, test, param=0, origins=1, size=0):
    v = rows.get((tr, test, param, origins, size))
    return v[0] if v else None


def main():
    rundir = sys.argv[1]
    meta = read_meta(rundir)
    rows = load(rundir)
    out = []
    w = out.append
    w("MPI one-sided on uzura and over TCP (%s)" % run_line(meta))
    w("Open MPI, one rank per node (two origins: 4 ranks on 2 nodes); %s s "
      "per test and size" %
      meta.get("secs", "?"))

    def line(label, vals, paper=""):
        u, t = vals
        ratio = u / t if u and t else None
        w("  %-28s %s %s %s   %s" % (label, fmt(u, 10), fmt(t, 10),
                                     fmt_ratio(ratio), paper))

    def section(title, unit):
        w("")
        w("%s (%s)%s" % (title, unit, " " * max(1, 26 - len(title) - len(unit))) +
          "      uzura        TCP  uzura/TCP   paper")

    sizes = sorted({k[4] for k in rows if k[1] == "latency"})
    section("one-sided ping-pong, fence", "us")
    for s in sizes:
        line(size_name(s), [get(rows, tr, "latency", size=s) for tr, _ in TRS],
             PAPER.get(("latency", s), ""))
    section("two-sided ping-pong", "us")
    for s in sizes:
        line(size_name(s), [get(rows, tr, "pingpong", size=s) for tr, _ in TRS])
    for test in ("put", "get"):
        section("MPI_%s bandwidth, 16 per epoch" % test.capitalize(), "MB/s")
        for s in sorted({k[4] for k in rows if k[1] == test}):
            line(size_name(s), [get(rows, tr, test, size=s) for tr, _ in TRS],
                 PAPER.get((test, s), ""))
    section("empty epoch", "us")
    kinds = ["fence", "pscw", "lock"]
    for n in sorted({k[3] for k in rows if k[1] == "sync"}):
        for p, kind in enumerate(kinds):
            line("%s, %d origin%s" % (kind, n, "s" if n > 1 else ""),
                 [get(rows, tr, "sync", p, n) for tr, _ in TRS],
                 PAPER.get(("sync", kind, n), ""))
    section("overlap: 16 x 64 KiB puts", "us")
    for p in sorted({k[2] for k in rows if k[1] == "overlap"}):
        line("%d steps after each put" % p,
             [get(rows, tr, "overlap", p, size=65536) for tr, _ in TRS])
        line("  the computation alone",
             [get(rows, tr, "compute", p, size=65536) for tr, _ in TRS])
    section("skew: origin's put burst", "us")
    for p in sorted({k[2] for k in rows if k[1] == "skew"}):
        line("target computes %d us" % p,
             [get(rows, tr, "skew", p, size=65536) for tr, _ in TRS])
    section("origins into one target", "MB/s")
    for n in sorted({k[3] for k in rows if k[1] == "origins"}):
        line("%d origin%s, 64 KiB" % (n, "s" if n > 1 else ""),
             [get(rows, tr, "origins", 0, n, 65536) for tr, _ in TRS],
             PAPER.get(("origins", n), ""))
    write_table(rundir, out)

    q = lambda x: "?" if x is None else "%.3f" % x  # noqa: E731
    dat = os.path.join(rundir, "plot.dat")
    with open(dat, "w") as f:
        f.write("# size lat_uzura lat_tcp put_uzura put_tcp get_uzura "
                "get_tcp\n")
        for s in sorted({k[4] for k in rows if k[1] in ("latency", "put")}):
            f.write("%d %s\n" % (s, " ".join(
                q(get(rows, tr, t, size=s)) for t in ("latency", "put", "get")
                for tr, _ in TRS)))
    png = os.path.join(rundir, "onesided.png")
    gp = os.path.join(rundir, "plot.gp")
    with open(gp, "w") as f:
        f.write("# Written by bench/onesided-report.py; run with gnuplot.\n")
        f.write(png_head(png, 450, "layout 1,2 title 'MPI one-sided "
                         "(%s)'" % meta.get("date", "")))
        f.write("set logscale xy\nset grid\nset key top left opaque box\n"
                "set xlabel 'message size (bytes)'\n")
        f.write("set title 'ping-pong with MPI_Put and fences, one way'\n"
                "set ylabel 'us'\n"
                "plot '%s' u 1:2 w lp t 'uzura', '' u 1:3 w lp t 'TCP', "
                "12.6 w l dt 2 t 'paper, 4 B: 12.6 us'\n" % dat)
        f.write("set key bottom right\n"
                "set title 'bandwidth, 16 operations per PSCW epoch'\n"
                "set ylabel 'MB/s'\n"
                "plot '%s' u 1:4 w lp t 'uzura put', '' u 1:6 w lp t "
                "'uzura get', '' u 1:5 w lp t 'TCP put', '' u 1:7 w lp t "
                "'TCP get', 865 w l dt 2 t 'paper put, 256 KiB: 865'\n" % dat)
        f.write("unset multiplot\n")
    gnuplot(gp, png)


if __name__ == "__main__":
    main()
