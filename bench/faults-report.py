#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The report of bench/faults:
#
#   faults-report.py RUNDIR    from RUNDIR/points.csv and RUNDIR/meta.txt:
#                              RUNDIR/table.txt (also printed), plot.gp and
#                              faults.png
#
# points.csv has one row per figure: rate (percent), transport, test
# (write_bw, read_bw, send_bw, write_lat, mpi_lat, mpi_lat99, mpi_bw,
# transfer, transfer_size in KiB, or a uzura counter moved during the
# point), value (empty when
# the point failed), unit, status (the exit status, or ok/corrupt/failed
# for the MPI job and the transfer).
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt, gnuplot, png_head, read_meta, write_table  # noqa: E402

NAMES = {"uzura-gbn": "uzura go-back-N", "uzura-sr": "uzura selective repeat",
         "rxe": "rxe (netem)", "tcp": "TCP (netem)"}
STYLE = {"uzura-gbn": "lc rgb '#1f77b4' pt 7", "uzura-sr": "lc rgb '#2ca02c' pt 9",
         "rxe": "lc rgb '#d62728' pt 5", "tcp": "lc rgb '#7f7f7f' pt 13"}
TESTS = [("write_bw", "RDMA WRITE 64 KiB (TCP: qperf tcp_bw)", "MB/s"),
         ("read_bw", "RDMA READ 64 KiB", "MB/s"),
         ("send_bw", "RDMA SEND 64 KiB", "MB/s"),
         ("write_lat", "RDMA WRITE 2 B latency (TCP: qperf tcp_lat)", "us"),
         ("mpi_lat", "MPI ping-pong 8 B, one way, median (Open MPI)", "us"),
         ("mpi_lat99", "MPI ping-pong 8 B, one way, 99th percentile", "us"),
         ("mpi_bw", "MPI streaming bandwidth 64 KiB (Open MPI)", "MB/s"),
         ("transfer", "checksummed transfer goodput", "MB/s")]
CHECKED = ("transfer", "mpi_lat", "mpi_lat99", "mpi_bw")
COUNTERS = ["fault_drops", "fault_dups", "fault_reorders", "fault_corrupts",
            "retransmits", "retry_timeouts", "nak_seq_rcvd", "sacks_rcvd",
            "sr_resent"]


def load(rundir):
    rows = {}
    with open(os.path.join(rundir, "points.csv")) as f:
        for r in csv.DictReader(f):
            v = float(r["value"]) if r["value"] else None
            rows[(r["rate"], r["transport"], r["test"])] = (v, r["status"])
    return rows


def transfer_meta(meta):
    """The transfer's size as the run's meta says (older runs: one size)."""
    if "transfer" in meta:
        return meta["transfer"]
    return "%s MiB" % meta.get("transfer_mib", "?")


def size_kib(rows, rate, trs):
    """The transfer's size at RATE, the same for every transport."""
    for t in trs:
        v = rows.get((rate, t, "transfer_size"), (None,))[0]
        if v:
            return "%d MiB" % (v / 1024) if v >= 1024 else "%d KiB" % v
    return ""  # older runs: one size, in the header


def rate_key(r):
    return float(r)


def table(rundir, meta, rows):
    rates = meta.get("rates", "").split()
    trs = [t for t in meta.get("transports", "").split() if t in NAMES]
    out = []
    w = out.append
    w("bench/faults %s, %s, %s at %s %%, MTU %s%s" % (
        meta.get("run", ""), meta.get("date", ""), meta.get("kind", "?"),
        " ".join(rates), meta.get("mtu", "?"),
        (", " + meta["note"]) if meta.get("note") else ""))
    w("host: %s; perftest -D %s s; transfer %s; elapsed %s" % (
        meta.get("host", "?"), meta.get("duration", "?"),
        transfer_meta(meta), meta.get("elapsed", "?")))
    w("'-': no figure (the point failed or timed out).  Transfer: ok, "
      "corrupt (the data differed), cut (the time limit ended it; its "
      "MB/s are those of the rounds checked) or failed")
    for test, title, unit in TESTS:
        w("")
        w("%s (%s)" % (title, unit))
        size = test == "transfer"
        w("  rate %  " + ("%9s" % "size" if size else "") +
          "".join("%24s" % NAMES[t] for t in trs) +
          ("   sr/gbn" if "uzura-sr" in trs and "uzura-gbn" in trs else ""))
        for r in rates:
            line = "  %6s  " % r
            if size:
                line += "%9s" % size_kib(rows, r, trs)
            for t in trs:
                v, st = rows.get((r, t, test), (None, ""))
                cell = fmt(v)
                if test == "transfer":
                    cell += " " + ({"ok": "ok", "": "?"}.get(st, st))
                elif test in CHECKED and st not in ("ok", ""):
                    cell += " " + st
                line += "%24s" % cell
            a = rows.get((r, "uzura-sr", test), (None,))[0]
            b = rows.get((r, "uzura-gbn", test), (None,))[0]
            if "uzura-sr" in trs and "uzura-gbn" in trs:
                line += "  %7s" % ("%.2fx" % (a / b) if a and b else "-")
            w(line)
    for t in ("uzura-gbn", "uzura-sr"):
        if t not in trs:
            continue
        w("")
        w("%s: counters of both NICs over all of a rate's tests" % NAMES[t])
        w("  rate %  " + "".join("%15s" % c for c in COUNTERS))
        for r in rates:
            w("  %6s  " % r + "".join(
                "%15s" % fmt(rows.get((r, t, c), (None,))[0]) for c in COUNTERS))
    write_table(rundir, out)
    return rates, trs


def plot(rundir, meta, rows, rates, trs):
    gp = os.path.join(rundir, "plot.gp")
    png = os.path.join(rundir, "faults.png")
    panels = [("write_bw", "bandwidth, RDMA WRITE 64 KiB / TCP stream", "MB/s",
               trs),
              ("transfer", "goodput of the checksummed transfer (%s)"
               % transfer_meta(meta), "MB/s", trs),
              ("write_lat", "latency, RDMA WRITE 2 B / TCP", "us", trs),
              ("retransmits", "uzura: packets sent again", "packets",
               [t for t in trs if t.startswith("uzura")]),
              ("mpi_bw", "MPI streaming bandwidth 64 KiB (Open MPI)", "MB/s",
               trs),
              ("mpi_lat99", "MPI ping-pong 8 B, one way, 99th percentile "
               "(Open MPI)", "us", trs)]
    with open(gp, "w") as f:
        w = f.write
        w("# Written by bench/faults-report.py; run with gnuplot.\n")
        for test, _, _, ts in panels:
            for t in ts:
                w("$%s_%s << EOD\n" % (t.replace("-", "_"), test))
                for i, r in enumerate(rates):
                    v = rows.get((r, t, test), (None,))[0]
                    w("%d %s\n" % (i, "?" if not v else "%.6g" % v))
                w("EOD\n")
        w(png_head(png, 1300, "layout 3,2 title 'uzura under injected %s "
                   "(%s)%s'" % (meta.get("kind", "?"), meta.get("run", ""),
                                (", " + meta["note"]) if meta.get("note")
                                else "")))
        w("set grid\nset logscale y 10\nset format y '%g'\n")
        w("set xrange [-0.3:%f]\n" % (len(rates) - 0.7))
        w("set xtics (%s)\n" % ", ".join('"%s" %d' % (r, i)
                                         for i, r in enumerate(rates)))
        w("set xlabel '%s rate (%%), on both nodes'\n" % meta.get("kind", "fault"))
        w("set key top right\n")
        for test, title, unit, ts in panels:
            w("set title \"%s\"\n" % title)
            w("set ylabel '%s'\n" % unit)
            lines = ["$%s_%s using 1:2 with linespoints %s title '%s'"
                     % (t.replace("-", "_"), test, STYLE[t], NAMES[t]) for t in ts]
            w("plot " + (", \\\n     ".join(lines) if lines else "NaN notitle") + "\n")
        w("unset multiplot\n")
    return gnuplot(gp, png)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: faults-report.py RUNDIR")
    rundir = sys.argv[1]
    meta = read_meta(rundir)
    rows = load(rundir)
    rates, trs = table(rundir, meta, rows)
    png = plot(rundir, meta, rows, rates, trs)
    if png:
        print("plot:  " + png)


if __name__ == "__main__":
    main()
