#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The report of bench/experiment connection:
#
#   connection-report.py RUNDIR   from RUNDIR/points.csv and meta.txt:
#                                 RUNDIR/table.txt (also printed), plot.gp
#                                 and connection.png
#
# points.csv: test (mem: bytes per QP, variant user or kernel; rate:
# messages per second, variant rq, srq, rq-coalesced or srq-coalesced),
# depth (send WQEs), variant, size (message bytes; 0 for mem), value,
# as bench/conn-bench.c prints them.
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt, gnuplot, png_head, read_meta, run_line, write_table  # noqa: E402

# The paper's table 2: memory per additional connection (MVAPICH, KB).
PAPER_MEM = {5: 8.82, 10: 12.82, 20: 20.81, 40: 36.86, 100: 68.73,
             200: 132.76}
VARIANTS = ["rq", "srq", "rq-coalesced", "srq-coalesced"]


def load(rundir):
    rows = {}
    with open(os.path.join(rundir, "points.csv")) as f:
        for r in csv.DictReader(f):
            rows[(r["test"], int(r["depth"]), r["variant"],
                  int(r["size"]))] = float(r["value"])
    return rows


def main():
    rundir = sys.argv[1]
    meta = read_meta(rundir)
    rows = load(rundir)
    depths = sorted({d for (t, d, _, _) in rows if t == "mem"})
    rdepths = sorted({d for (t, d, _, _) in rows if t == "rate"})
    sizes = sorted({s for (t, _, _, s) in rows if t == "rate"})
    out = []
    w = out.append
    w("Connection memory on uzura (%s)" % run_line(meta))
    w("")
    w("memory per RC QP (256 QPs on one SRQ, in INIT), KiB")
    w("  send WQEs     user   kernel    total   paper (MVAPICH, KB)")
    for d in depths:
        u = rows.get(("mem", d, "user", 0))
        k = rows.get(("mem", d, "kernel", 0))
        tot = (u + k) / 1024 if u is not None and k is not None else None
        w("%11d %s %s %s %s" % (d, fmt(u / 1024 if u is not None else None),
                               fmt(k / 1024 if k is not None else None),
                               fmt(tot), fmt(PAPER_MEM.get(d), 12)))
    w("")
    w("message rate, thousands of messages per second (windows of 64, "
      "%s s a point)" % meta.get("secs", "?"))
    w("   size depth " + "".join("%14s" % v for v in VARIANTS))
    for s in sizes:
        for d in rdepths:
            vals = [rows.get(("rate", d, v, s)) for v in VARIANTS]
            w("%7d %5d " % (s, d) + "".join(
                fmt(v / 1000 if v is not None else None, 14) for v in vals))
    write_table(rundir, out)

    q = lambda x: "?" if x is None else "%.3f" % x  # noqa: E731
    mem = os.path.join(rundir, "mem.dat")
    with open(mem, "w") as f:
        f.write("# depth user_kib kernel_kib total_kib paper_kb\n")
        for d in depths:
            u = rows.get(("mem", d, "user", 0))
            k = rows.get(("mem", d, "kernel", 0))
            f.write("%d %s %s %s %s\n" % (
                d, q(u / 1024 if u is not None else None),
                q(k / 1024 if k is not None else None),
                q((u + k) / 1024 if None not in (u, k) else None),
                q(PAPER_MEM.get(d))))
    rate = os.path.join(rundir, "rate.dat")
    cols = [(d, v) for d in rdepths for v in VARIANTS]
    with open(rate, "w") as f:
        f.write("# size " + " ".join("%s-%d" % (v, d) for d, v in cols) +
                "\n")
        for s in sizes:
            f.write("%d %s\n" % (s, " ".join(
                q(rows[("rate", d, v, s)] / 1000
                  if ("rate", d, v, s) in rows else None)
                for d, v in cols)))
    png = os.path.join(rundir, "connection.png")
    gp = os.path.join(rundir, "plot.gp")
    with open(gp, "w") as f:
        f.write("# Written by bench/connection-report.py; run with gnuplot.\n")
        f.write(png_head(png, 450, "layout 1,2 title 'Connection memory "
                         "on uzura (%s)'" % meta.get("date", "")))
        f.write("set grid\nset key top left opaque box\n")
        f.write("set title 'memory per connection'\n"
                "set xlabel 'send WQEs'\nset ylabel 'KiB'\n"
                "plot '%s' u 1:4 w lp t 'uzura, total', "
                "'' u 1:2 w lp t 'uzura, user', "
                "'' u 1:3 w lp t 'uzura, kernel', "
                "'' u 1:5 w lp dt 2 t 'paper (MVAPICH)'\n" % mem)
        f.write("set title 'message rate, receiver on an SRQ'\n"
                "set logscale x 2\nset xlabel 'message size (bytes)'\n"
                "set ylabel 'thousand messages/s'\nplot ")
        plots = []
        for i, (d, v) in enumerate(cols):
            if not v.startswith("srq"):
                continue
            plots.append("'%s' u 1:%d w lp t '%d WQEs%s'" % (
                rate if not plots else "", i + 2, d,
                ", coalesced" if "coalesced" in v else ""))
        f.write(", ".join(plots) + "\n")
        f.write("unset multiplot\n")
    gnuplot(gp, png)


if __name__ == "__main__":
    main()
