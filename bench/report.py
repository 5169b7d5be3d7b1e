#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The benchmark's parser and report (see bench/README.md).
#
#   report.py value LOG KIND      print one figure from one tool's output:
#                                 KIND is bw (perftest *_bw, MB/s), lat
#                                 (perftest *_lat, us), qperf-bw (MB/s) or
#                                 qperf-lat (us); exit 1 when there is none
#   report.py report RUNDIR       from RUNDIR/meta.txt and RUNDIR/logs/:
#                                 RUNDIR/bench.csv, RUNDIR/table.txt (also
#                                 printed), RUNDIR/plot.gp and bench.png
#
# Units: MB/s is 10^6 bytes per second everywhere (perftest's MiB/sec are
# converted); latencies in microseconds.
import csv
import math
import os
import re
import subprocess
import sys

NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"

# perftest's bandwidth column units, in MB/s (10^6 B/s).
PERFTEST_BW_UNITS = {"MiB/sec": 1.048576, "MB/sec": 1.048576,
                     "Gb/sec": 125.0, "GB/sec": 1000.0}
# qperf's units.
QPERF_BW_UNITS = {"bytes/sec": 1e-6, "KB/sec": 1e-3, "MB/sec": 1.0,
                  "GB/sec": 1e3, "KiB/sec": 1.024e-3,
                  "MiB/sec": 1.048576, "GiB/sec": 1073.741824}
QPERF_LAT_UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "sec": 1e6, "s": 1e6}


def perftest_rows(text):
    """(header, fields as text) of each perftest result line: a '#bytes'
    header followed by rows whose first two fields are integers and the
    rest numbers."""
    header = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#bytes"):
            header = s
            continue
        f = s.split()
        if header and len(f) >= 3 and f[0].isdigit() and f[1].isdigit() and \
                all(re.fullmatch(NUM, x) for x in f):
            yield header, f


def digits(s):
    """Significant digits in a printed number."""
    return len(s.replace(".", "").replace("-", "").lstrip("0"))


def perftest_bw(text):
    for header, f in perftest_rows(text):
        unit = re.search(r"BW average\[([^\]]+)\]", header)
        if not unit or unit.group(1) not in PERFTEST_BW_UNITS or len(f) < 4:
            continue
        # #bytes #iterations BW-peak BW-average MsgRate[Mpps]: the average
        # has two decimals, too few at small sizes, where the message rate
        # (six decimals) times the size says more.
        bw = float(f[3]) * PERFTEST_BW_UNITS[unit.group(1)]
        if len(f) >= 5 and "MsgRate[Mpps]" in header and digits(f[4]) > digits(f[3]):
            bw = float(f[4]) * int(f[0])
        return bw
    return None


def perftest_lat(text):
    for header, f in perftest_rows(text):
        cols = header.split()
        # Iterations mode: ... t_typical t_avg ...; duration mode:
        # #bytes #iterations t_avg[usec] tps ...
        for i, c in enumerate(cols):
            if c.startswith("t_avg[usec]") and i < len(f):
                return float(f[i])
    return None


def qperf(text, what):
    if what == "bw":
        m = re.search(r"\bbw\s*=\s*(" + NUM + r")\s*(\S+)", text)
        units = QPERF_BW_UNITS
    else:
        m = re.search(r"\blatency\s*=\s*(" + NUM + r")\s*(\S+)", text)
        units = QPERF_LAT_UNITS
    if not m or m.group(2) not in units:
        return None
    return float(m.group(1)) * units[m.group(2)]


def shm_ring(text, what):
    """shm-ring-bench's "shm_bw = N MB/s" or "shm_lat = N us"."""
    m = re.search(r"\bshm_" + what + r"\s*=\s*(" + NUM + r")\s", text)
    return float(m.group(1)) if m else None


def value(path, kind):
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    if kind == "bw":
        return perftest_bw(text)
    if kind == "lat":
        return perftest_lat(text)
    if kind == "qperf-bw":
        return qperf(text, "bw")
    if kind == "qperf-lat":
        return qperf(text, "lat")
    if kind in ("ring-bw", "ring-lat"):
        return shm_ring(text, kind[5:])
    raise SystemExit("report.py: unknown kind " + kind)


def read_kv(path):
    """KEY=VALUE lines of a file; {} when it cannot be read."""
    kv = {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep:
                    kv[k.strip()] = v.strip()
    except OSError:
        pass
    return kv


def read_meta(rundir):
    return read_kv(os.path.join(rundir, "meta.txt"))


def png_head(png, height, title):
    """The first lines of a plot script: a PNG of 1400 x @height pixels,
    text as given, '?' for a missing point, a multiplot under @title."""
    return ("set terminal pngcairo size 1400,%d font ',10'\n"
            "set output '%s'\n"
            "set termoption noenhanced\n"
            "set datafile missing '?'\n"
            "set multiplot %s\n" % (height, png, title))


def gnuplot(gp, png):
    """Run a gnuplot script; the PNG it wrote, or None."""
    r = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("%s: gnuplot failed:\n%s"
                         % (os.path.basename(sys.argv[0]), r.stderr))
        return None
    return png


# Transports: the CSV name, what the table and plot call it, and its tests.
RDMA_TESTS = ["write", "read", "send"]
TRANSPORTS = {
    "uzura": ("uzura (perftest)", RDMA_TESTS),
    "rxe": ("rxe on virtio-net (perftest)", RDMA_TESTS),
    "tcp-virtio": ("TCP on virtio-net (qperf)", ["tcp"]),
    "tcp-uzura": ("TCP on the uzura netdev (qperf)", ["tcp"]),
    "host": ("host loopback TCP (qperf)", ["tcp"]),
    "host-shm": ("two host processes through the shm link's rings "
                 "(bench/shm-ring-bench.c)", ["ring"]),
}


def kind_of(tr, kind):
    """How a transport's log is read: perftest's, qperf's or the ring's."""
    if tr in ("uzura", "rxe"):
        return kind
    return ("ring-" if tr == "host-shm" else "qperf-") + kind


def log_name(tr, test, kind, size):
    return "%s-%s-%s-%d.log" % (tr, test, kind, size)


def collect(rundir, meta):
    """{(transport, test, size): [bw, lat, note]} for every point run."""
    sizes = [int(s) for s in meta["sizes"].split()]
    transports = meta["transports"].split()
    logs = os.path.join(rundir, "logs")
    res = {}
    for tr in transports:
        for test in TRANSPORTS[tr][1]:
            for size in sizes:
                row = [None, None, []]
                for i, kind in enumerate(("bw", "lat")):
                    name = log_name(tr, test, kind, size)
                    path = os.path.join(logs, name)
                    if not os.path.exists(path):
                        row[2].append(kind + " not run")
                        continue
                    row[i] = value(path, kind_of(tr, kind))
                    if row[i] is None:
                        rc = ""
                        try:
                            with open(path + ".rc") as f:
                                rc = f.read().strip()
                        except OSError:
                            pass
                        row[2].append(kind + (" timed out" if rc in ("124", "137")
                                              else " failed"))
                res[(tr, test, size)] = row
    return sizes, transports, res


def write_table(rundir, lines):
    """A report's table: RUNDIR/table.txt, and the same on stdout."""
    text = "\n".join(lines) + "\n"
    with open(os.path.join(rundir, "table.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


def run_line(meta):
    """A paper experiment's second title line: when, on what, the note."""
    return "%s, guest kernel %s%s" % (
        meta.get("date", "?"), meta.get("guest_kernel", "?"),
        ", " + meta["note"] if meta.get("note") else "")


def fit(points):
    """Least squares T = a * p + b over (p, T): (a, b), or Nones."""
    n = len(points)
    if n < 2:
        return None, None
    sx = sum(p for p, _ in points)
    sy = sum(t for _, t in points)
    sxx = sum(p * p for p, _ in points)
    sxy = sum(p * t for p, t in points)
    a = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return a, (sy - a * sx) / n


def fmt(v, width=8):
    if v is None:
        return "-".rjust(width)
    if v >= 100:
        s = "%.0f" % v
    elif v >= 10:
        s = "%.1f" % v
    elif v >= 1:
        s = "%.2f" % v
    else:
        s = "%.3f" % v
    return s.rjust(width)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ratio(r, width=7):
    if r is None:
        return "-".rjust(width)
    if r >= 100:
        return ("%.0fx" % r).rjust(width)
    if r >= 10:
        return ("%.1fx" % r).rjust(width)
    if r >= 0.01:
        return ("%.2fx" % r).rjust(width)
    return ("%.1ex" % r).rjust(width)


def size_name(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return "%dM" % (n >> 20)
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return "%dK" % (n >> 10)
    return str(n)


def table(sizes, transports, res, meta):
    out = []
    p = out.append

    def get(tr, test, size, i):
        r = res.get((tr, test, size))
        return r[i] if r else None

    p("uzura benchmark, run %s (%s)" % (meta.get("run", "?"), meta.get("date", "?")))
    p("host: %s; guests: %s" % (meta.get("host", "?"), meta.get("guests", "?")))
    p("MTU %s (RoCE %s); perftest %s; qperf -t %s%s"
      % (meta.get("mtu", "?"), meta.get("roce_mtu", "?"),
         meta.get("perftest_flags", "?"), meta.get("duration", "?"),
         ("; " + meta["note"]) if meta.get("note") else ""))
    if meta.get("load"):
        p("host load average (1 min) at start / end: %s" % meta["load"])
    p("MB/s = 10^6 bytes/s. Ratios are uzura's figure over the other's: above 1 is")
    p("better for bandwidth, below 1 is better for latency.  Latency is one way")
    p("(half a ping-pong) except RDMA read: a whole read round trip.  '-' = not")
    p("measured (failed or timed out: see the CSV's note and logs/).")
    tcp = "tcp-virtio" if "tcp-virtio" in transports else None
    host = "host" if "host" in transports else None
    ring = "host-shm" if "host-shm" in transports else None
    rdma = [t for t in ("uzura", "rxe") if t in transports]
    for test in RDMA_TESTS if rdma else []:
        for i, what, unit in ((0, "bandwidth", "MB/s"), (1, "latency", "us")):
            p("")
            p("RDMA %s %s, %s (ib_%s_%s)" % (test, what, unit, test,
                                          "bw" if i == 0 else "lat"))
            cols = ["  #bytes"] + ["%9s" % t for t in rdma]
            if tcp:
                cols.append("%9s" % "TCP")
            if host:
                cols.append("%9s" % "host")
            if ring:
                cols.append("%9s" % "ring")
            if "uzura" in transports:
                if "rxe" in transports:
                    cols.append("%8s" % "u/rxe")
                if tcp:
                    cols.append("%8s" % "u/TCP")
                if host:
                    cols.append("%8s" % "u/host")
                if ring:
                    cols.append("%8s" % "u/ring")
            p(" ".join(cols))
            for size in sizes:
                u = get("uzura", test, size, i)
                cols = ["%8s" % size_name(size)]
                cols += [fmt(get(t, test, size, i), 9) for t in rdma]
                if tcp:
                    cols.append(fmt(get(tcp, "tcp", size, i), 9))
                if host:
                    cols.append(fmt(get(host, "tcp", size, i), 9))
                if ring:
                    cols.append(fmt(get(ring, "ring", size, i), 9))
                if "uzura" in transports:
                    if "rxe" in transports:
                        cols.append(fmt_ratio(ratio(u, get("rxe", test, size, i)), 8))
                    if tcp:
                        cols.append(fmt_ratio(ratio(u, get(tcp, "tcp", size, i)), 8))
                    if host:
                        cols.append(fmt_ratio(ratio(u, get(host, "tcp", size, i)), 8))
                    if ring:
                        cols.append(fmt_ratio(ratio(u, get(ring, "ring", size, i)), 8))
                p(" ".join(cols))
    others = [t for t in transports if t not in ("uzura", "rxe")]
    if others:
        p("")
        p("TCP (qperf tcp_bw, tcp_lat) and the shm link's rings "
          "(host-shm): bandwidth MB/s / latency us")
        p("  #bytes " + " ".join("%21s" % t for t in others))
        for size in sizes:
            p("%8s " % size_name(size) + " ".join(
                "%10s /%10s" % (fmt(get(t, TRANSPORTS[t][1][0], size, 0), 9).strip(),
                                fmt(get(t, TRANSPORTS[t][1][0], size, 1), 9).strip())
                for t in others))

    # The link issue's targets, with the measured ratios (bench/rate
    # measures the message rate and host CPU targets).
    p("")
    p("Targets (from the issue; benchmark figures, not test assertions)")
    targets = [
        ("ib_write_bw 64 KiB >= 20x rxe",
         ratio(get("uzura", "write", 65536, 0), get("rxe", "write", 65536, 0)),
         ">=", 20.0, "x"),
        ("ib_write_bw 64 KiB >= 1.0x host loopback TCP",
         ratio(get("uzura", "write", 65536, 0), get(host, "tcp", 65536, 0)),
         ">=", 1.0, "x"),
        ("ib_write_bw 4 KiB >= 1.02 GB/s",
         get("uzura", "write", 4096, 0), ">=", 1020.0, " MB/s"),
        ("ib_write_lat 2 B <= 1/5 guest TCP latency",
         ratio(get("uzura", "write", 2, 1), get(tcp, "tcp", 2, 1)),
         "<=", 0.2, "x"),
        ("ib_write_lat 2 B <= 2x host loopback TCP latency",
         ratio(get("uzura", "write", 2, 1), get(host, "tcp", 2, 1)),
         "<=", 2.0, "x"),
    ]
    for name, v, op, goal, unit in targets:
        if v is None:
            verdict, shown = "not measured", "-"
        else:
            ok = v >= goal if op == ">=" else v <= goal
            verdict = "met" if ok else "missed"
            shown = (fmt(v, 0) + unit) if unit != "x" else fmt_ratio(v, 0)
        goal_s = ("%g%s" % (goal, unit)) if unit != "x" else ("%gx" % goal)
        p("  %-50s measured %12s  target %s %-10s %s"
          % (name, shown, op, goal_s, verdict))
    return "\n".join(out) + "\n"


def write_csv(path, sizes, transports, res):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["transport", "test", "size", "bw_MBps", "lat_us", "note"])
        for tr in transports:
            for test in TRANSPORTS[tr][1]:
                for size in sizes:
                    bw, lat, note = res[(tr, test, size)]
                    w.writerow([tr, test, size,
                                "" if bw is None else "%.6g" % bw,
                                "" if lat is None else "%.6g" % lat,
                                "; ".join(note)])


STYLE = {"uzura": "lw 2 pt 7 lc rgb '#d62728'",
         "rxe": "lw 2 pt 5 lc rgb '#1f77b4'",
         "tcp-virtio": "lw 2 pt 9 lc rgb '#2ca02c'",
         "tcp-uzura": "lw 2 pt 11 dt 2 lc rgb '#9467bd'",
         "host": "lw 2 pt 13 dt 3 lc rgb '#7f7f7f'",
         "host-shm": "lw 2 pt 15 dt 4 lc rgb '#ff7f0e'"}


SHORT = {"uzura": "uzura", "rxe": "rxe on virtio-net",
         "tcp-virtio": "TCP on virtio-net", "tcp-uzura": "TCP on uzura netdev",
         "host": "host loopback TCP",
         "host-shm": "host processes, shm rings"}


def yrange(res, test, i):
    """Whole decades around the values of one panel."""
    v = [r[i] for (tr, t, _), r in res.items()
         if t in (test, "tcp", "ring") and r[i] is not None and r[i] > 0]
    if not v:
        return 1, 10
    lo = math.floor(math.log10(min(v)))
    hi = max(math.ceil(math.log10(max(v))), lo + 1)
    return 10.0 ** lo, 10.0 ** hi


def plot(rundir, sizes, transports, res, meta):
    gp = os.path.join(rundir, "plot.gp")
    png = os.path.join(rundir, "bench.png")
    tests = [t for t in RDMA_TESTS
             if any(tr in transports for tr in ("uzura", "rxe"))] or ["tcp"]
    with open(gp, "w") as f:
        w = f.write
        w("# Written by bench/report.py; run with gnuplot.\n")
        for tr in transports:
            for test in TRANSPORTS[tr][1]:
                w("$%s_%s << EOD\n" % (tr.replace("-", "_"), test))
                for size in sizes:
                    bw, lat, _ = res[(tr, test, size)]
                    w("%d %s %s\n" % (size, "?" if bw is None else "%.6g" % bw,
                                      "?" if lat is None else "%.6g" % lat))
                w("EOD\n")
        # Panels of PH pixels, two per row, under a title and key strip
        # of TOP pixels.
        ph, top = 340, 75
        height = ph * len(tests) + top
        w(png_head(png, height, "title 'uzura benchmark %s, MTU %s%s'"
                   % (meta.get("run", ""), meta.get("mtu", "?"),
                      (", " + meta["note"]) if meta.get("note") else "")))
        # The key, once for all panels: a plot of nothing across the top.
        w("set origin 0, %.4f\nset size 1, %.4f\n" % (1 - top / height, 35.0 / height))
        w("unset border\nunset tics\nset xrange [0:1]\nset yrange [0:1]\n")
        w("set key center center horizontal maxrows 1 samplen 3 width 3\n")
        w("plot " + ", ".join("NaN with linespoints %s title '%s'" % (STYLE[tr], SHORT[tr])
                              for tr in transports) + "\n")
        w("unset key\nset border\nset tics\nset grid\n")
        w("set logscale x 2\nset logscale y 10\nset xrange [*:*]\n")
        w("set xtics (%s)\n" % ", ".join('"%s" %d' % (size_name(n), n) for n in sizes))
        w("set ytics 10\nset format y '%g'\n")
        w("set offsets graph 0.03, graph 0.03, 0, 0\n")
        w("set xlabel 'message size (bytes)'\n")
        for row, test in enumerate(tests):
            for col, what, unit in ((2, "bandwidth", "MB/s"), (3, "latency", "us")):
                if test == "tcp":
                    title = "TCP %s" % what
                else:
                    title = "RDMA %s %s (ib_%s_%s) vs TCP" % (
                        test, what, test, "bw" if col == 2 else "lat")
                w("set origin %.4f, %.4f\nset size 0.5, %.4f\n"
                  % (0.5 * (col - 2), (len(tests) - 1 - row) * ph / height, ph / height))
                w("set title \"%s\"\n" % title)
                w("set ylabel '%s (%s)'\n" % (what, unit))
                w("set yrange [%g:%g]\n" % yrange(res, test, col - 2))
                lines = []
                for tr in transports:
                    # An RDMA panel also shows the TCP and ring figures.
                    t = test if test in TRANSPORTS[tr][1] else TRANSPORTS[tr][1][0]
                    if t in RDMA_TESTS and t != test:
                        continue
                    lines.append("$%s_%s using 1:%d with linespoints %s notitle"
                                 % (tr.replace("-", "_"), t, col, STYLE[tr]))
                w("plot " + ", \\\n     ".join(lines) + "\n")
        w("unset multiplot\n")
    return gnuplot(gp, png)


def report(rundir):
    meta = read_meta(rundir)
    sizes, transports, res = collect(rundir, meta)
    csv_path = os.path.join(rundir, "bench.csv")
    write_csv(csv_path, sizes, transports, res)
    text = table(sizes, transports, res, meta)
    with open(os.path.join(rundir, "table.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    png = plot(rundir, sizes, transports, res, meta)
    print("")
    print("CSV:   " + csv_path)
    print("table: " + os.path.join(rundir, "table.txt"))
    if png:
        print("plot:  " + png)


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "value":
        v = value(a[1], a[2])
        if v is None:
            sys.exit(1)
        print("%.6g" % v)
    elif len(a) == 2 and a[0] == "report":
        report(a[1])
    else:
        sys.exit("usage: report.py value LOG bw|lat|qperf-bw|qperf-lat|"
                 "ring-bw|ring-lat\n"
                 "       report.py report RUNDIR")


if __name__ == "__main__":
    main()
