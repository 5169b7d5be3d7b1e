#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The report of bench/incast:  incast-report.py RUNDIR
#
# Reads RUNDIR/summary.csv (one row a configuration: recovery mode,
# DCQCN off or on, the marking thresholds KMIN/KMAX/PMAX; total goodput
# in Mbit/s, Jain's fairness index over the senders, the latency flow's
# mean in microseconds, the port's drops, the receiver's CE-marked
# packets and CNPs sent, the senders' CNPs handled, every node's
# retransmissions), points.csv (each sender's goodput), queue.csv (every
# half second of each flow: the port's queue in bytes, and its drops,
# CE marks and the receiver's CNPs since the flow started) and, when the
# MPI flow ran, mpi.csv (the all-to-all's rounds and round times).  Runs
# from before the MPI flow have queue.csv with the queue and drops only.
# Writes table.txt (also printed), incast.gp and incast.png: goodput per
# sender per configuration, the queue and the marks over time, and the
# all-to-all's round times.
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt, gnuplot, png_head, read_meta, write_table  # noqa: E402


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def label(r):
    return "%s DCQCN %s %s" % (r["mode"], r["dcqcn"], r["ecn"])


def per_config(path, y, rows):
    """A gnuplot plot of column expression @y over time, a line a config."""
    return "plot " + ", ".join(
        "'%s' using ($1 == %s ? $2 : 1/0):(%s) with lines title '%s'" % (
            path, r["config"], y, label(r)) for r in rows) + "\n"


def report(rundir):
    meta = read_meta(rundir)
    with open(os.path.join(rundir, "summary.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(rundir, "points.csv")) as f:
        points = list(csv.DictReader(f))
    with open(os.path.join(rundir, "queue.csv")) as f:
        queue = list(csv.DictReader(f))
    for q in queue:
        q.setdefault("flow", "perftest")
    mpi = []
    if os.path.exists(os.path.join(rundir, "mpi.csv")):
        with open(os.path.join(rundir, "mpi.csv")) as f:
            mpi = list(csv.DictReader(f))
    senders = sorted({p["sender"] for p in points})

    lines = [
        "incast: %s senders into node %s through a %s port (limit %s), "
        "%s s a configuration" % (meta.get("senders", "?"),
                                  meta.get("receiver", "?"),
                                  meta.get("rate", "?"), meta.get("limit", "?"),
                                  meta.get("duration_s", "?")),
        "%s; %s; ECN %s%s" % (meta.get("date", "?"), meta.get("host", "?"),
                              meta.get("marker", "?"),
                              "; " + meta["note"] if meta.get("note") else ""),
        "",
        "%-28s %8s %6s %s %6s %8s %7s %7s %7s %7s %8s" % (
            "configuration (KMIN/KMAX/PMAX)", "Mbit/s", "Jain",
            " ".join("%7s" % s for s in senders), "failed", "lat us", "drops",
            "marked", "CNPs", "handled", "retrans"),
    ]
    for r in rows:
        per = {p["sender"]: num(p["goodput_mbps"]) for p in points
               if p["config"] == r["config"]}
        qs = [num(q["queue_bytes"]) for q in queue
              if q["config"] == r["config"] and q["flow"] == "perftest" and
              num(q["queue_bytes"]) is not None]
        lines.append("%-28s %s %6s %s %6s %s %7s %7s %7s %7s %8s" % (
            label(r), fmt(num(r["total_mbps"])), r["jain"],
            " ".join(fmt(per.get(s), 7) for s in senders), r["failed"],
            fmt(num(r["lat_avg_us"])), r["dropped"], r["marked"],
            r["cnp_sent"], r["cnp_handled"], r["retransmits"]))
        if qs:
            lines.append("%-28s queue: mean %.0f B, max %.0f B over %d samples"
                         % ("", sum(qs) / len(qs), max(qs), len(qs)))
    if mpi:
        lines += ["", "MPI_Alltoall, one rank a node, 64 KiB blocks, every "
                  "byte checked (bench/alltoall-bench.c):",
                  "%-28s %-10s %7s %9s %9s %9s %9s %6s %7s %7s %8s" % (
                      "configuration (KMIN/KMAX/PMAX)", "status", "rounds",
                      "mean ms", "p50 ms", "p99 ms", "max ms", "errors",
                      "drops", "marked", "retrans")]
        for m in mpi:
            ms = [num(m[k]) for k in ("mean_us", "p50_us", "p99_us", "max_us")]
            lines.append("%-28s %-10s %7s %s %6s %7s %7s %8s" % (
                label(m), m["status"], m["rounds"] or "-",
                " ".join(fmt(v / 1000 if v is not None else None, 9)
                         for v in ms),
                m["errors"] or "-", m["dropped"], m["marked"],
                m["retransmits"]))
    lines += ["",
              "Mbit/s: 10^6 bit/s of WRITE payload (perftest --report_gbits); "
              "Jain: (sum x)^2 / (n sum x^2), 1 when even;",
              "failed: senders whose ib_write_bw gave no result (a QP that "
              "ended in error, retry exceeded), 0 in Jain's index;",
              "lat: ib_write_lat (2 B) from node 1 through the same port, "
              "mean; drops: the port's; marked, CNPs: the receiver's",
              "np_ecn_marked_roce_packets and np_cnp_sent; handled: the "
              "senders' rp_cnp_handled; retrans: every node's retransmits.",
              "MPI: status ok when mpirun exited 0 and printed no error; "
              "a round's time is its slowest rank's; drops, marked: the "
              "port's."]
    write_table(rundir, lines)

    png = os.path.join(rundir, "incast.png")
    gp = os.path.join(rundir, "incast.gp")
    dat = os.path.join(rundir, "goodput.dat")
    with open(dat, "w") as f:
        f.write("config %s\n" % " ".join(senders))
        for r in rows:
            per = {p["sender"]: p["goodput_mbps"] or "?" for p in points
                   if p["config"] == r["config"]}
            f.write("\"%s\" %s\n" % (label(r),
                                     " ".join(per.get(s, "?") for s in senders)))
    # The perftest flow's samples, as gnuplot reads them: config, seconds,
    # queue bytes; and its marks a second between consecutive samples.
    qdat = os.path.join(rundir, "queue-perftest.dat")
    mdat = os.path.join(rundir, "marks.dat")
    with open(qdat, "w") as fq, open(mdat, "w") as fm:
        fq.write("config,t_s,queue_bytes\n")
        fm.write("config,t_s,marks_per_s\n")
        prev = {}
        have_marks = False
        for q in queue:
            if q["flow"] != "perftest":
                continue
            c, t = q["config"], num(q["t_s"])
            fq.write("%s,%s,%s\n" % (c, q["t_s"], q["queue_bytes"]))
            m = num(q.get("marked"))
            if t is None or m is None:
                continue
            if c in prev and t > prev[c][0]:
                fm.write("%s,%.2f,%.1f\n" % (c, t, (m - prev[c][1]) /
                                             (t - prev[c][0])))
                have_marks = True
            prev[c] = (t, m)
    adat = os.path.join(rundir, "alltoall.dat")
    with open(adat, "w") as f:
        f.write("config mean p99\n")
        for m in mpi:
            mean, p99 = num(m["mean_us"]), num(m["p99_us"])
            f.write("\"%s\" %s %s\n" % (
                label(m), "%.2f" % (mean / 1000) if mean is not None else "?",
                "%.2f" % (p99 / 1000) if p99 is not None else "?"))
    with open(gp, "w") as f:
        f.write("# Written by bench/incast-report.py; run with gnuplot.\n")
        panels = 2 + have_marks + bool(mpi)
        f.write(png_head(png, 300 * panels + 100, "layout %d,1 title" % panels +
                         " 'incast into node %s "
                         " through a %s port, %s'" % (
                             meta.get("receiver", "?"), meta.get("rate", "?"),
                             meta.get("date", "?"))))
        f.write("set style data histograms\n"
                "set style histogram clustered gap 1\n"
                "set style fill solid 0.8 border -1\n"
                "set ylabel 'goodput (Mbit/s)'\n"
                "set xtics rotate by -20\n"
                "set key top right\n"
                "set yrange [0:*]\n"
                "set title 'goodput of each sender'\n")
        f.write("plot " + ", ".join(
            "'%s' using %d:xtic(1) title columnheader(%d)" % (dat, i + 2, i + 2)
            for i in range(len(senders))) + "\n")
        f.write("unset style\nset style data lines\nunset xtics\nset xtics\n"
                "set xlabel 'seconds into the configuration'\n"
                "set ylabel 'queue at the port (KiB)'\n"
                "set title 'the port queue (tc -s backlog every 0.5 s)'\n"
                "set datafile separator ','\n")
        f.write(per_config(qdat, "$3 / 1024", rows))
        if have_marks:
            f.write("set ylabel 'CE marks a second'\n"
                    "set title 'marks at the port (differences of the "
                    "marker count every 0.5 s)'\n")
            f.write(per_config(mdat, "$3", rows))
        if mpi:
            f.write("set style data histograms\n"
                    "set style histogram clustered gap 1\n"
                    "set style fill solid 0.8 border -1\n"
                    "set datafile separator whitespace\n"
                    "unset xlabel\nset xtics rotate by -20\n"
                    "set ylabel 'round time (ms)'\n"
                    "set title 'MPI_Alltoall, 64 KiB blocks, round time of "
                    "the slowest rank'\n")
            f.write("plot '%s' using 2:xtic(1) title 'mean', "
                    "'' using 3 title 'p99'\n" % adat)
        f.write("unset multiplot\n")
    gnuplot(gp, png)
    return 0


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: incast-report.py RUNDIR\n")
        return 2
    return report(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
