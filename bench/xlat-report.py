#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The report of bench/experiment xlat:
#
#   xlat-report.py RUNDIR   from RUNDIR/points.csv and meta.txt:
#                           RUNDIR/table.txt (also printed), plot.gp and
#                           xlat.png
#
# points.csv: cache (xlat-cache-entries), then bench/xlat-bench.c's
# columns: mr_mib, pattern (seq, random), writes, hits, misses,
# evictions, us_per_write.
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt, gnuplot, png_head, read_meta, run_line, write_table  # noqa: E402

# The UZURA paper's stage times (its table 5): a translation from the
# table on the NIC takes 0.04 us, one read from host memory 0.32 us.
ON_NIC_US, HOST_US = 0.04, 0.32


def load(rundir):
    rows = {}
    with open(os.path.join(rundir, "points.csv")) as f:
        for r in csv.DictReader(f):
            hits, misses = int(r["hits"]), int(r["misses"])
            rate = hits / (hits + misses) if hits + misses else None
            rows[(int(r["cache"]), int(r["mr_mib"]), r["pattern"])] = (
                rate, float(r["us_per_write"]), int(r["evictions"]))
    return rows


def modeled(rate):
    return None if rate is None else rate * ON_NIC_US + (1 - rate) * HOST_US


def main():
    rundir = sys.argv[1]
    meta = read_meta(rundir)
    rows = load(rundir)
    caches = sorted({k[0] for k in rows})
    mrs = sorted({k[1] for k in rows})
    out = []
    w = out.append
    w("uzura's translation cache (%s)" % run_line(meta))
    w("64-byte RDMA WRITEs at the start of one page after another, one "
      "node, loopback")
    w("")
    w("cache  MR MiB  hit % seq  hit % random  us/write seq  random  "
      "modeled xlat us seq  random")
    for c in caches:
        for m in mrs:
            s = rows.get((c, m, "seq"), (None, None, None))
            r = rows.get((c, m, "random"), (None, None, None))
            pct = lambda x: None if x is None else 100 * x  # noqa: E731
            w("%5d %7d %s %s %s %s %s %s" % (
                c, m, fmt(pct(s[0]), 10), fmt(pct(r[0]), 13), fmt(s[1], 13),
                fmt(r[1], 7), fmt(modeled(s[0]), 20), fmt(modeled(r[0]), 7)))
    w("")
    w("modeled xlat: hit rate x %.2f us (on the NIC) + miss rate x %.2f us "
      "(host memory), the UZURA paper's stage times" % (ON_NIC_US, HOST_US))
    write_table(rundir, out)

    dat = os.path.join(rundir, "plot.dat")
    q = lambda x: "?" if x is None else "%.4f" % x  # noqa: E731
    with open(dat, "w") as f:
        f.write("# mr_mib " + " ".join("seq-%d random-%d" % (c, c)
                                       for c in caches) + "\n")
        for m in mrs:
            f.write("%d %s\n" % (m, " ".join(
                "%s %s" % (q(100 * rows[(c, m, "seq")][0]
                             if rows.get((c, m, "seq"), (None,))[0] is not None
                             else None),
                           q(100 * rows[(c, m, "random")][0]
                             if rows.get((c, m, "random"), (None,))[0] is not None
                             else None))
                for c in caches)))
    png = os.path.join(rundir, "xlat.png")
    gp = os.path.join(rundir, "plot.gp")
    with open(gp, "w") as f:
        f.write("# Written by bench/xlat-report.py; run with gnuplot.\n")
        f.write(png_head(png, 450, "layout 1,2 title 'uzura translation "
                         "cache (%s)'" % meta.get("date", "")))
        f.write("set logscale x 2\nset grid\nset key bottom left opaque box\n"
                "set xlabel 'MR size (MiB)'\nset ylabel 'hit %'\n"
                "set yrange [0:105]\n")
        for k, pat in enumerate(("seq", "random")):
            f.write("set title '%s pages'\nplot " % (
                "consecutive" if pat == "seq" else "random"))
            f.write(", ".join("'%s' u 1:%d w lp t '%d entries (%s)'" % (
                dat if i == 0 else "", 2 + 2 * i + k, c,
                "%d MiB" % (c * 4 // 1024) if c >= 256 else "%d KiB" % (c * 4))
                for i, c in enumerate(caches)) + "\n")
        f.write("unset multiplot\n")
    gnuplot(gp, png)


if __name__ == "__main__":
    main()
