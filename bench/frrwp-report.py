#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The report of bench/frrwp:
#
#   frrwp-report.py RUNDIR   from RUNDIR/points.csv and RUNDIR/meta.txt:
#                            RUNDIR/table.txt (also printed), plot.gp and
#                            frrwp.png
#
# points.csv: flow (seq, overlap, crw: one transaction; reg, dereg: one
# ibv_reg_mr or ibv_dereg_mr), pages, iters, median_us, mean_us, min_us,
# as bench/frrwp-bench.c prints them.  Medians are what the table, the
# fits and the plot use: under TCG a few iterations take the host's
# scheduling hiccups, which a mean would spread over the rest.
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fit, fmt, gnuplot, png_head, read_meta, run_line, write_table  # noqa: E402

# The paper's figures (FRRWP, section 4): registration plus deregistration
# T = a * p + b with a = 0.77 us per page and b = 7.42 us per operation,
# from its reference [18]; what FRRWP saves, T = 21.42 + 0.77 * p us
# (T_r = 7.42 + 0.77 * p from overlapped registration, T_c = 14 us from
# the CRW).
PAPER_A, PAPER_B, PAPER_TC = 0.77, 7.42, 14.0
FLOWS = ["seq", "overlap", "crw"]


def load(rundir):
    rows = {}
    with open(os.path.join(rundir, "points.csv")) as f:
        for r in csv.DictReader(f):
            rows[(r["flow"], int(r["pages"]))] = float(r["median_us"])
    return rows


def main():
    rundir = sys.argv[1]
    meta = read_meta(rundir)
    rows = load(rundir)
    pages = sorted({p for (_, p) in rows})
    regs = [(p, rows[("reg", p)] + rows[("dereg", p)]) for p in pages
            if ("reg", p) in rows and ("dereg", p) in rows]
    a, b = fit(regs)
    out = []
    w = out.append
    w("FRRWP on uzura: one RDMA write transaction with its registrations "
      "(medians of %s, microseconds)" % meta.get("iters", "?"))
    w(run_line(meta))
    w("")
    w("pages     seq  overlap      crw   saved  (ovl)   paper saved  "
      "reg+dereg")
    for p in pages:
        v = [rows.get((f, p)) for f in FLOWS]
        saved = v[0] - v[2] if None not in (v[0], v[2]) else None
        sovl = v[0] - v[1] if None not in (v[0], v[1]) else None
        rd = dict(regs).get(p)
        w("%5d %s %s %s %s %s %s %s" % (
            p, fmt(v[0]), fmt(v[1]), fmt(v[2]), fmt(saved, 7),
            fmt(sovl, 6), fmt(PAPER_TC + PAPER_B + PAPER_A * p, 13),
            fmt(rd, 10)))
    w("")
    if a is not None:
        w("registration + deregistration, fitted: T = %.3f * p + %.2f us "
          "(paper: T = %.2f * p + %.2f us)" % (a, b, PAPER_A, PAPER_B))
    sv = [(p, rows[("seq", p)] - rows[("crw", p)]) for p in pages
          if ("seq", p) in rows and ("crw", p) in rows]
    sa, sb = fit(sv)
    if sa is not None:
        w("saved by FRRWP, fitted: T = %.2f + %.3f * p us "
          "(paper: T = %.2f + %.2f * p us)" % (sb, sa, PAPER_TC + PAPER_B,
                                                PAPER_A))
    write_table(rundir, out)

    dat = os.path.join(rundir, "plot.dat")
    with open(dat, "w") as f:
        f.write("# pages seq overlap crw saved saved_overlap paper_saved "
                "regdereg fit\n")
        for p in pages:
            v = [rows.get((f2, p)) for f2 in FLOWS]
            q = lambda x: "?" if x is None else "%.3f" % x  # noqa: E731
            rd = dict(regs).get(p)
            f.write("%d %s %s %s %s %s %.3f %s %s\n" % (
                p, q(v[0]), q(v[1]), q(v[2]),
                q(v[0] - v[2] if None not in (v[0], v[2]) else None),
                q(v[0] - v[1] if None not in (v[0], v[1]) else None),
                PAPER_TC + PAPER_B + PAPER_A * p, q(rd),
                q(a * p + b if a is not None else None)))
    png = os.path.join(rundir, "frrwp.png")
    gp = os.path.join(rundir, "plot.gp")
    with open(gp, "w") as f:
        f.write("# Written by bench/frrwp-report.py; run with gnuplot.\n")
        f.write(png_head(png, 450, "layout 1,3 title 'FRRWP on uzura "
                         "(%s)'" % meta.get("date", "")))
        f.write("set logscale x 2\nset xlabel 'region size (4 KiB pages)'\n"
                "set key top left opaque box\nset grid\n")
        f.write("set title 'one write transaction, median'\n"
                "set ylabel 'us'\n"
                "plot '%s' u 1:2 w lp t 'typical (seq)', "
                "'' u 1:3 w lp t 'overlapped registration', "
                "'' u 1:4 w lp t 'FRRWP (CRW)'\n" % dat)
        f.write("set title 'time saved against the typical flow'\n"
                "plot '%s' u 1:5 w lp t 'uzura: FRRWP', "
                "'' u 1:6 w lp t 'uzura: overlap only', "
                "'' u 1:7 w l dt 2 t 'paper model 21.42 + 0.77 p'\n" % dat)
        f.write("set title 'ibv_reg_mr + ibv_dereg_mr, median'\n"
                "plot '%s' u 1:8 w p pt 7 t 'uzura', "
                "'' u 1:9 w l t 'fit a p + b', "
                "7.42 + 0.77 * x w l dt 2 t 'paper 7.42 + 0.77 p'\n" % dat)
        f.write("unset multiplot\n")
    gnuplot(gp, png)


if __name__ == "__main__":
    main()
