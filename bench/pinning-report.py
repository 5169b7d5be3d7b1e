#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The report of bench/experiment pinning:
#
#   pinning-report.py RUNDIR   from RUNDIR/points.csv and RUNDIR/meta.txt:
#                              RUNDIR/table.txt (also printed), plot.gp and
#                              pinning.png
#
# points.csv: flow (pin, cache, odp, odp-cache), size (bytes), msgs,
# mbps (10^6 bytes/s, the median of the repetitions) and reg_us (pin and
# odp: the median ibv_reg_mr + ibv_dereg_mr of one message), as
# bench/pin-bench.c prints them.
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fit, fmt, gnuplot, png_head, read_meta, run_line, size_name, write_table  # noqa: E402

FLOWS = [("pin", "pin every message"), ("cache", "registration cache"),
         ("odp", "ODP, declared per message"),
         ("odp-cache", "ODP, registered once")]
# The paper's table 1: Open-MX pinning + unpinning, base and per page.
PAPER = [("Opteron 265, 1.8 GHz", 4.2, 720, 5.5),
         ("Opteron 8347, 1.9 GHz", 2.2, 330, 12),
         ("Xeon E5435, 2.33 GHz", 2.3, 250, 16),
         ("Xeon E5460, 3.16 GHz", 1.3, 150, 26.5)]
PAGE = 4096


def load(rundir):
    rows = {}
    with open(os.path.join(rundir, "points.csv")) as f:
        for r in csv.DictReader(f):
            rows[(r["flow"], int(r["size"]))] = (
                float(r["mbps"]), float(r["reg_us"]) if r["reg_us"] else None)
    return rows


def main():
    rundir = sys.argv[1]
    meta = read_meta(rundir)
    rows = load(rundir)
    sizes = sorted({s for (_, s) in rows})
    out = []
    w = out.append
    w("Pinning on uzura: a stream of RDMA WRITEs, 4 in flight (MB/s, "
      "median of %s runs)" % meta.get("reps", "?"))
    w(run_line(meta))
    w("")
    w("    size      pin    cache      odp odp-cache  pin/cache  "
      "reg+dereg: pin     odp")
    for s in sizes:
        v = [rows.get((f, s), (None, None)) for f, _ in FLOWS]
        ratio = v[0][0] / v[1][0] if v[0][0] and v[1][0] else None
        w("%8s %s %s %s %s %10s %15s %7s" % (
            size_name(s), fmt(v[0][0]), fmt(v[1][0]), fmt(v[2][0]),
            fmt(v[3][0], 9), "%.2f" % ratio if ratio else "-",
            fmt(v[0][1]), fmt(v[2][1])))
    w("")
    fits = {}
    for f in ("pin", "odp"):
        pts = [(s / PAGE, rows[(f, s)][1]) for s in sizes
               if rows.get((f, s), (None, None))[1] is not None]
        a, b = fit(pts)
        fits[f] = (a, b)
        if a is not None:
            w("%s: reg + dereg = %.2f us + %.0f ns/page (%s GB/s)" % (
                f, b, a * 1000,
                "%.1f" % (PAGE / (a * 1000)) if a > 0 else "-"))
    w("paper (Open-MX pin + unpin, table 1):")
    for cpu, base, ns, gbs in PAPER:
        w("  %-24s %.1f us + %d ns/page (%.1f GB/s)" % (cpu, base, ns, gbs))
    write_table(rundir, out)

    dat = os.path.join(rundir, "plot.dat")
    with open(dat, "w") as f:
        f.write("# size_kib " + " ".join(n for n, _ in FLOWS) +
                " reg_pin reg_odp\n")
        for s in sizes:
            v = [rows.get((n, s), (None, None)) for n, _ in FLOWS]
            q = lambda x: "?" if x is None else "%.3f" % x  # noqa: E731
            f.write("%g %s %s %s\n" % (s / 1024, " ".join(q(x[0]) for x in v),
                                       q(v[0][1]), q(v[2][1])))
    png = os.path.join(rundir, "pinning.png")
    gp = os.path.join(rundir, "plot.gp")
    with open(gp, "w") as f:
        f.write("# Written by bench/pinning-report.py; run with gnuplot.\n")
        f.write(png_head(png, 450, "layout 1,2 title 'Pinning on uzura "
                         "(%s)'" % meta.get("date", "")))
        f.write("set logscale x 2\nset xlabel 'message size (KiB)'\n"
                "set key top left opaque box\nset grid\n")
        f.write("set title 'RDMA WRITE stream, 4 in flight'\n"
                "set ylabel 'MB/s'\nplot " +
                ", ".join("'%s' u 1:%d w lp t '%s'" % (dat if i == 0 else "",
                                                      i + 2, t)
                          for i, (_, t) in enumerate(FLOWS)) + "\n")
        f.write("set title 'ibv_reg_mr + ibv_dereg_mr of one message'\n"
                "set ylabel 'us'\nset logscale y\n"
                "plot '%s' u 1:6 w lp t 'pinned', '' u 1:7 w lp t 'ODP', "
                "1.3 + 0.15 * x / 4 w l dt 2 t 'paper, Xeon E5460', "
                "4.2 + 0.72 * x / 4 w l dt 3 t 'paper, Opteron 265'\n" % dat)
        f.write("unset multiplot\n")
    gnuplot(gp, png)


if __name__ == "__main__":
    main()
