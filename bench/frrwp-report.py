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
# as bench/frrwp-bench.c prints them; and the kernel's fast registration
# from bench/kmod/uz_frwr_bench.c (fastreg: ib_map_mr_sg and IB_WR_REG_MR
# to its completion; localinv: IB_WR_LOCAL_INV), which bench/experiment
# converts to the same columns.  Medians are what the table, the
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
# The paper's table 1: kernel fast registration (VAPI, a Mellanox MT25204)
# of 4 KiB .. 128 KiB, microseconds by pages.
PAPER_KFAST = {1: 0.506637, 2: 0.513922, 4: 0.561122, 8: 0.626815,
               16: 0.785199, 32: 1.026974}


def load(rundir):
    rows = {}
    with open(os.path.join(rundir, "points.csv")) as f:
        for r in csv.DictReader(f):
            rows[(r["flow"], int(r["pages"]))] = float(r["median_us"])
    return rows


def kernel_table(w, rows, pages, meta, regs, user_fit):
    """The kernel fast registration section: its table and fits, beside
    ibv_reg_mr's and the paper's; ([(p, reg)], [(p, reg + inval)])."""
    kregs = [(p, rows[("fastreg", p)]) for p in pages
             if ("fastreg", p) in rows]
    kboth = [(p, rows[("fastreg", p)] + rows[("localinv", p)])
             for p in pages if ("fastreg", p) in rows and
             ("localinv", p) in rows]
    if not kregs:
        return kregs, kboth
    w("")
    w("kernel fast registration (bench/kmod/uz_frwr_bench.c; medians of %s, "
      "microseconds)" % meta.get("kernel_iters", "?"))
    w("pages  REG_MR  LOCAL_INV    both  paper fast MR  ibv_reg_mr  "
      "reg+dereg")
    for p in pages:
        w("%5d %s %s %s %s %s %s" % (
            p, fmt(rows.get(("fastreg", p)), 7),
            fmt(rows.get(("localinv", p)), 10), fmt(dict(kboth).get(p)),
            fmt(PAPER_KFAST.get(p), 14), fmt(rows.get(("reg", p)), 11),
            fmt(dict(regs).get(p), 10)))
    w("")
    ka, kb = fit(kregs)
    if ka is not None:
        w("kernel REG_MR, fitted:             T = %.4f * p + %.2f us"
          % (ka, kb))
    ba, bb = fit(kboth)
    if ba is not None:
        w("kernel REG_MR + LOCAL_INV, fitted: T = %.4f * p + %.2f us"
          % (ba, bb))
    pa, pb = fit(sorted(PAPER_KFAST.items()))
    w("paper's kernel fast MR (table 1):  T = %.4f * p + %.2f us" % (pa, pb))
    ua, ub = fit([(p, rows[("reg", p)]) for p in pages if ("reg", p) in rows])
    if ua is not None:
        w("user ibv_reg_mr, fitted:           T = %.4f * p + %.2f us"
          % (ua, ub))
    if user_fit[0] is not None:
        w("user ibv_reg_mr + ibv_dereg_mr:    T = %.4f * p + %.2f us "
          "(paper: T_r = %.2f * p + %.2f us)" % (user_fit + (PAPER_A,
                                                             PAPER_B)))
    return kregs, kboth


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
    kregs, kboth = kernel_table(w, rows, pages, meta, regs, (a, b))
    write_table(rundir, out)

    ka, kb = fit(kboth)
    dat = os.path.join(rundir, "plot.dat")
    with open(dat, "w") as f:
        f.write("# pages seq overlap crw saved saved_overlap paper_saved "
                "regdereg fit kernel_reg kernel_reg_inval kernel_fit "
                "paper_kernel_fast\n")
        for p in pages:
            v = [rows.get((f2, p)) for f2 in FLOWS]
            q = lambda x: "?" if x is None else "%.3f" % x  # noqa: E731
            rd = dict(regs).get(p)
            f.write("%d %s %s %s %s %s %.3f %s %s %s %s %s %s\n" % (
                p, q(v[0]), q(v[1]), q(v[2]),
                q(v[0] - v[2] if None not in (v[0], v[2]) else None),
                q(v[0] - v[1] if None not in (v[0], v[1]) else None),
                PAPER_TC + PAPER_B + PAPER_A * p, q(rd),
                q(a * p + b if a is not None else None),
                q(dict(kregs).get(p)), q(dict(kboth).get(p)),
                q(ka * p + kb if ka is not None else None),
                q(PAPER_KFAST.get(p))))
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
        kernel = ""
        if kboth:
            kernel = (", '' u 1:10 w p pt 5 t 'uzura: kernel REG_MR', "
                      "'' u 1:11 w p pt 9 t 'uzura: kernel REG_MR + "
                      "LOCAL_INV', '' u 1:12 w l t 'fit of REG_MR + "
                      "LOCAL_INV', '' u 1:13 w lp dt 2 t 'paper: kernel "
                      "fast MR (table 1)'")
        # Room above the points for the key: log scale, 1.5 decades.
        ys = [t for _, t in regs + kregs + kboth] + list(PAPER_KFAST.values())
        f.write("set title 'registration, median (log scale)'\n"
                "set logscale y\nset yrange [%g:%g]\n"
                % (min(ys) / 2, max(ys) * 50))
        f.write("set key top left\n"
                "plot '%s' u 1:8 w p pt 7 t 'uzura: ibv_reg_mr + "
                "ibv_dereg_mr', '' u 1:9 w l t 'its fit a p + b', "
                "7.42 + 0.77 * x w l dt 2 t 'paper 7.42 + 0.77 p'%s\n"
                % (dat, kernel))
        f.write("unset multiplot\n")
    gnuplot(gp, png)


if __name__ == "__main__":
    main()
