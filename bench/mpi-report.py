#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The parser and report of bench/mpi (see bench/README.md).
#
#   mpi-report.py brief LOG        one line about one run's log (progress)
#   mpi-report.py value LOG bw     ib_write_bw's bandwidth in MB/s (as
#                                  report.py value LOG bw)
#   mpi-report.py report RUNDIR    from RUNDIR/meta.txt and RUNDIR/logs/:
#                                  RUNDIR/mpi.csv, RUNDIR/mpi.txt (also
#                                  printed), RUNDIR/mpi.gp and mpi.png
#
# The logs (written by bench/mpi), per transport TR:
#   TR-netpipe.log            NPopenmpi's output
#   TR-p2p.N.log, TR-rma.N.log   mpi-bench's output, N = 1, 2...: a job that
#                             fails part-way is started again after the size
#                             it failed at
#   each with .rc (exit status), .cmd (limit_s=..., cmd=...) and .traffic
#   (what node 2 received meanwhile)
#   uzura-ib_write_bw-1048576.log   perftest's client
#
# Units: MB/s is 10^6 bytes per second; latencies in microseconds.
import csv
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report as base  # noqa: E402  (bench/report.py: perftest parser, formats)

fmt, fmt_ratio, ratio, size_name = base.fmt, base.fmt_ratio, base.ratio, base.size_name

TRANSPORTS = ["uzura", "rxe", "rxe-rc", "tcp-virtio"]
DESCR = {
    "uzura": "Open MPI + UCX on uzura0, the image's defaults",
    "rxe": "Open MPI + UCX on Soft-RoCE rxe0 (virtio-net link), UCX's defaults",
    "rxe-rc": "the same with UCX_TLS=rc_v (RC for data, UD only to connect) "
              "and UCX's UD GID check off",
    "tcp-virtio": "Open MPI ob1 + TCP BTL on the virtio-net link, osc rdma",
}
STYLE = {"uzura": "lc rgb '#d62728' pt 7",
         "rxe": "lc rgb '#1f77b4' pt 5",
         "rxe-rc": "lc rgb '#17becf' pt 13",
         "tcp-virtio": "lc rgb '#2ca02c' pt 9"}

# mpi-bench's result lines: name, the CSV metrics its fields give.
LAT_TESTS = {"pingpong": "lat", "put_lat": "put_lat", "get_lat": "get_lat"}
BW_TESTS = {"bw": "bw", "put_bw": "put_bw", "get_bw": "get_bw"}
GROUP_TESTS = {"p2p": ["pingpong", "bw"],
               "rma": ["put_lat", "put_bw", "get_lat", "get_bw"]}
# The CSV metrics of each test, with units.
TEST_METRICS = {
    "pingpong": [("lat_min", "us"), ("lat_med", "us"), ("lat_p99", "us"),
                 ("pingpong_bw", "MB/s")],
    "bw": [("bw", "MB/s")],
    "put_lat": [("put_lat_min", "us"), ("put_lat_med", "us"), ("put_lat_p99", "us")],
    "put_bw": [("put_bw", "MB/s")],
    "get_lat": [("get_lat_min", "us"), ("get_lat_med", "us"), ("get_lat_p99", "us")],
    "get_bw": [("get_bw", "MB/s")],
}

NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
NETPIPE_LINE = re.compile(r"^\s*\d+:\s+(\d+)\s+bytes\s+(\d+)\s+times\s+-->\s+(" + NUM +
                          r")\s+Mbps\s+in\s+(" + NUM + r")\s+usec")
BENCH_LINE = re.compile(r"^(pingpong|bw|put_lat|put_bw|get_lat|get_bw|done|bad|timeout)"
                        r"\s+(.*)$")


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def rc_of(log):
    t = read(log[:-4] + ".rc" if log.endswith(".log") else log + ".rc")
    t = (t or "").strip()
    return int(t) if t.lstrip("-").isdigit() else None


# ---- parsing one log

def parse_netpipe(text):
    """{size: (lat_us one way, MB/s, repeats)} from NetPIPE's lines (it
    prints them on stderr; the bandwidth is bytes / time, since NetPIPE's
    'Mbps' are 2^20 bits/s)."""
    res = {}
    for line in text.splitlines():
        m = NETPIPE_LINE.match(line)
        if m:
            size, reps, usec = int(m.group(1)), int(m.group(2)), float(m.group(4))
            res[size] = (usec, size / usec if usec > 0 else None, reps)
    return res


def parse_np_out(text):
    """{size: seconds one way} from NetPIPE's output file (bytes, Mbps,
    seconds)."""
    res = {}
    for line in text.splitlines():
        f = line.split()
        try:
            if len(f) >= 3 and float(f[2]) > 0:
                res[int(f[0])] = float(f[2])
        except ValueError:
            continue
    return res


def parse_bench(text):
    """(results {(test, size): fields}, done sizes, bad {(test, size)},
    timeout (test, size) or None) from mpi-bench's output."""
    res, done, bad, timeout = {}, [], set(), None
    for line in text.splitlines():
        m = BENCH_LINE.match(line.strip())
        if not m:
            continue
        name, f = m.group(1), m.group(2).split()
        try:
            if name == "done" and f:
                done.append(int(f[0]))
            elif name in ("bad", "timeout") and len(f) >= 2:
                if name == "bad":
                    bad.add((f[0], int(f[1])))
                else:
                    timeout = (f[0], int(f[1]))
            elif name in LAT_TESTS and len(f) >= 5:
                res[(name, int(f[0]))] = [float(x) for x in f[1:4]] + [int(f[4])]
            elif name in BW_TESTS and len(f) >= 3:
                res[(name, int(f[0]))] = [float(f[1]), int(f[2])]
        except ValueError:
            continue
    return res, done, bad, timeout


UCX_PREFIX = re.compile(r"^\[\d+\.\d+\]\s+\[[^\]]*\]\s*")
OMPI_PREFIX = re.compile(r"^\[[\w.-]+:\d+\]\s*(?:\*\*\*\s*)?")
# What makes a line of a failed run's output telling, best first.
ERROR_PATTERNS = [r"\bFatal\b", r"UCX\s+ERROR",
                  r"cannot be selected|[Cc]annot |[Cc]ould not",
                  r"An error occurred in|MPI_ERR_\w+", r"No components|[Uu]nable to",
                  r"[Ee]rror", r"\bfailed\b|[Aa]bort|exited on signal|unreachable|"
                  r"not found|refused", r"[Tt]imed? ?out|\bWARN", r"_ERROR_LOG"]
# Open MPI's boilerplate around an error, never the error itself.
BOILERPLATE = re.compile(
    r"base_help_aggregate|Set MCA parameter|help message|^-+$|Primary job|"
    r"Per user-direction|one or more processes|Process name:|Exit code:|"
    r"ERRORS_ARE_FATAL|potentially your MPI job|"
    r"reported by process|on communicator|^stderr:?$|backtrace|^\d+ 0x")


def error_lines(text, n=3):
    """The most telling lines of a failed run's output, best first."""
    lines = []
    for line in (text or "").splitlines():
        s = UCX_PREFIX.sub("", line.strip())
        s = OMPI_PREFIX.sub("", s)
        s = re.sub(r"\s+", " ", s).strip(" -=")
        if s and not BENCH_LINE.match(s) and not NETPIPE_LINE.match(line) \
                and not s.startswith("#") and not BOILERPLATE.search(s) and s not in lines:
            lines.append(s)
    found = []
    for pat in ERROR_PATTERNS:
        for s in lines:
            if re.search(pat, s) and s[:200] not in found:
                found.append(s[:200])
    return found[:n]


def error_line(text):
    e = error_lines(text, 1)
    return e[0] if e else None


def run_reason(log, text, rc, cmd):
    """Why a run ended badly, or None if it did not."""
    _, done, _, timeout = parse_bench(text or "")
    if rc == 0:
        return None
    if timeout and timeout[0] == "startup":
        return ("the ranks did not connect within the watchdog (first message or "
                "MPI_Win_allocate)")
    if timeout:
        return "%s at %s B took longer than the watchdog" % (timeout[0], size_name(timeout[1]))
    if rc is None:
        return "no exit status (the run did not finish)"
    err = error_line(text)
    if rc in (124, 137):
        r = "timed out (limit %s s)" % cmd.get("limit_s", "?")
        return r + (": " + err if err else "")
    return "failed (status %d)%s" % (rc, ": " + err if err else "")


def brief(log):
    """One line for the progress output of bench/mpi."""
    text = read(log) or ""
    rc = rc_of(log)
    cmd = base.read_kv(log[:-4] + ".cmd")
    out = []
    if "netpipe" in os.path.basename(log):
        np = parse_netpipe(text)
        if np:
            lo, hi = min(np), max(np)
            out.append("%d sizes; %s B %s us, %s B %s MB/s"
                       % (len(np), size_name(lo), fmt(np[lo][0], 0).strip(),
                          size_name(hi), fmt(np[hi][1], 0).strip()))
    else:
        res, done, bad, _ = parse_bench(text)
        if done:
            out.append("%d sizes (%s..%s B)" % (len(done), size_name(done[0]),
                                               size_name(done[-1])))
        if done:
            for (t, s), v in sorted(res.items()):
                if s == done[0] and t in LAT_TESTS:
                    out.append("%s %s B %s us" % (t, size_name(s), fmt(v[1], 0).strip()))
            for (t, s), v in sorted(res.items()):
                if s == done[-1] and t in BW_TESTS:
                    out.append("%s %s B %s MB/s" % (t, size_name(s), fmt(v[0], 0).strip()))
        if bad:
            out.append("DATA CHECK FAILED: " + ", ".join("%s %s" % b for b in sorted(bad)))
    why = run_reason(log, text, rc, cmd)
    if why:
        out.append(why)
    return "; ".join(out) if out else "no result"


# ---- the whole run

def bench_sizes(meta):
    return [int(s) for s in meta.get("sizes", "").split()]


def collect(rundir, meta):
    """rows: {(tr, tool, metric, size): [value, unit, iters, note]};
    failures: [(tr, what, reason)]; traffic: {tr: {counter: total}}."""
    logs = os.path.join(rundir, "logs")
    names = sorted(os.listdir(logs)) if os.path.isdir(logs) else []
    transports = meta.get("transports", "").split()
    sizes = bench_sizes(meta)
    rows, failures, traffic = {}, [], {}

    def add_traffic(tr, path):
        for k, v in base.read_kv(path).items():
            if v.lstrip("-").isdigit():
                traffic.setdefault(tr, {}).setdefault(k, 0)
                traffic[tr][k] += int(v)

    for tr in transports:
        # NetPIPE
        log = os.path.join(logs, tr + "-netpipe.log")
        if os.path.exists(log):
            text = read(log) or ""
            rc = rc_of(log)
            np = parse_netpipe(text)
            for size, (lat, bw, reps) in np.items():
                rows[(tr, "netpipe", "lat", size)] = [lat, "us", reps, ""]
                rows[(tr, "netpipe", "bw", size)] = [bw, "MB/s", reps, ""]
            if not np:
                # NetPIPE's own output file, fetched at the end of the run
                np = {size: (t * 1e6, size / (t * 1e6), None)
                      for size, t in parse_np_out(read(os.path.join(
                          logs, "netpipe-out", "np-%s.out" % tr)) or "").items()}
                for size, (lat, bw, reps) in np.items():
                    rows[(tr, "netpipe", "lat", size)] = [lat, "us", reps, ""]
                    rows[(tr, "netpipe", "bw", size)] = [bw, "MB/s", reps, ""]
            why = run_reason(log, text, rc, base.read_kv(log[:-4] + ".cmd"))
            if why:
                failures.append((tr, "NetPIPE", why, error_lines(text)[1:]))
                if not np:
                    rows[(tr, "netpipe", "lat", "")] = [None, "us", None, why]
                    rows[(tr, "netpipe", "bw", "")] = [None, "MB/s", None, why]
            add_traffic(tr, log[:-4] + ".traffic")
        # mpi-bench, both groups
        for group, tests in GROUP_TESTS.items():
            parts = sorted((n for n in names
                            if re.fullmatch(re.escape(tr) + "-" + group + r"\.\d+\.log", n)),
                           key=lambda n: int(n.split(".")[-2]))
            if not parts:
                continue
            # For each size, why it is missing: the reason of the part that
            # covered it (or was last to try).
            missing_why = {}
            for p in parts:
                path = os.path.join(logs, p)
                text = read(path) or ""
                rc = rc_of(path)
                cmd = base.read_kv(path[:-4] + ".cmd")
                add_traffic(tr, path[:-4] + ".traffic")
                res, done, bad, timeout = parse_bench(text)
                for (t, s), v in res.items():
                    note = "data check failed" if (t, s) in bad else ""
                    if t in LAT_TESTS:
                        vals = v[:3] if not note else [None] * 3
                        for (metric, unit), x in zip(TEST_METRICS[t][:3], vals):
                            rows[(tr, "mpi-bench", metric, s)] = [x, unit, v[3], note]
                        if t == "pingpong":
                            bw = s / v[1] if v[1] > 0 and not note else None
                            rows[(tr, "mpi-bench", "pingpong_bw", s)] = [bw, "MB/s", v[3], note]
                    else:
                        rows[(tr, "mpi-bench", TEST_METRICS[t][0][0], s)] = \
                            [v[0] if not note else None, "MB/s", v[1], note]
                why = run_reason(path, text, rc, cmd)
                if why:
                    start = re.search(r"-m (\d+)", cmd.get("cmd", ""))
                    failures.append((tr, "mpi-bench %s (sizes from %s B)"
                                     % (group, size_name(int(start.group(1))) if start else "?"),
                                     why, error_lines(text)[1:]))
                    first = int(start.group(1)) if start else 0
                    for s in sizes:
                        if s >= first and s not in done:
                            missing_why[s] = why
            for t in tests:
                for metric, unit in TEST_METRICS[t]:
                    for s in sizes:
                        key = (tr, "mpi-bench", metric, s)
                        if key not in rows:
                            rows[key] = [None, unit, None,
                                         "not measured: " + missing_why.get(s, "not run")]
        # ib_write_bw, uzura only
        log = os.path.join(logs, "%s-ib_write_bw-1048576.log" % tr)
        if os.path.exists(log):
            v = base.value(log, "bw")
            note = ""
            if v is None:
                rc = rc_of(log)
                note = ("timed out" if rc in (124, 137) else
                        "failed: " + (error_line(read(log)) or "status %s" % rc))
                failures.append((tr, "ib_write_bw 1 MiB", note, []))
            rows[(tr, "perftest", "ib_write_bw", 1048576)] = [v, "MB/s", None, note]
    return transports, sizes, rows, failures, traffic


def write_csv(path, rows, transports):
    order = {t: i for i, t in enumerate(transports)}
    tools = {"mpi-bench": 0, "netpipe": 1, "perftest": 2}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["transport", "tool", "metric", "size", "value", "unit", "iters", "note"])
        for key in sorted(rows, key=lambda k: (order.get(k[0], 99), tools.get(k[1], 9),
                                               k[2], k[3] if k[3] != "" else -1)):
            v, unit, iters, note = rows[key]
            w.writerow([key[0], key[1], key[2], key[3],
                        "" if v is None else "%.6g" % v, unit,
                        "" if iters is None else iters, note])


def table(meta, transports, sizes, rows, failures, traffic):
    out = []
    p = out.append

    def get(tr, tool, metric, size):
        r = rows.get((tr, tool, metric, size))
        return r[0] if r else None

    p("uzura MPI benchmark, run %s (%s)" % (meta.get("run", "?"), meta.get("date", "?")))
    p("host: %s; guests: %s" % (meta.get("host", "?"), meta.get("guests", "?")))
    p("%s; %s; NetPIPE %s" % (meta.get("mpi") or "MPI ?", meta.get("ucx") or "UCX ?",
                              meta.get("netpipe") or "?"))
    p("MTU %s (RoCE %s); mpi-bench %s s per test and size, at most %s rounds "
      "(latency) / %s (bandwidth), %s in flight%s"
      % (meta.get("mtu", "?"), meta.get("roce_mtu", "?"), meta.get("budget", "?"),
         meta.get("lat_rounds", "?"), meta.get("bw_rounds", "?"), meta.get("window", "?"),
         ("; " + meta["note"]) if meta.get("note") else ""))
    if meta.get("load"):
        p("host load average (1 min) at start / end: %s" % meta["load"])
    p("MB/s = 10^6 bytes/s; latency in us.  Ratios are uzura's figure over the")
    p("other's: above 1 is better for bandwidth, below 1 for latency.  '-' = not")
    p("measured: the CSV's note and 'Runs that failed' below say why.")
    p("")
    p("Transports (mpirun -np 2 from node 1, one rank per node):")
    for tr in transports:
        p("  %-10s %s" % (tr, DESCR.get(tr, "")))
        p("  %-10s flags: %s" % ("", meta.get("flags_" + tr) or "(none)"))
        t = traffic.get(tr)
        if t:
            p("  %-10s node 2 received meanwhile: %s RC packets on uzura0, "
              "%s packets on rxe0, %s MB on virtio-net"
              % ("", t.get("uzura_rc_rx_pkts", "?"), t.get("rxe_rx_pkts", "?"),
                 fmt(t["virtio_rx_bytes"] / 1e6, 0).strip()
                 if "virtio_rx_bytes" in t else "?"))

    show = [s for s in (1, 64, 1024, 4096, 65536, 262144, 1048576, 4194304) if s in sizes]
    others = [t for t in ("tcp-virtio", "rxe", "rxe-rc") if t in transports]
    short = {"tcp-virtio": "TCP", "rxe": "rxe", "rxe-rc": "rxe-rc"}

    def section(title, tool, metric, size_list):
        if not size_list:
            return
        p("")
        p(title)
        cols = ["  #bytes"] + ["%10s" % t for t in transports]
        if "uzura" in transports:
            cols += ["%9s" % ("u/" + short[t]) for t in others]
        p(" ".join(cols))
        for s in size_list:
            u = get("uzura", tool, metric, s)
            cols = ["%8s" % size_name(s)] + [fmt(get(t, tool, metric, s), 10)
                                             for t in transports]
            if "uzura" in transports:
                cols += [fmt_ratio(ratio(u, get(t, tool, metric, s)), 9) for t in others]
            p(" ".join(cols))

    section("MPI ping-pong latency, one way, median, us (mpi-bench; min and p99 in the CSV)",
            "mpi-bench", "lat_med", show)
    one = [t for t in transports if get(t, "mpi-bench", "lat_med", 1) is not None]
    if one and 1 in sizes:
        p("  1 B min / median / p99: " + "; ".join(
            "%s %s / %s / %s" % (t, fmt(get(t, "mpi-bench", "lat_min", 1), 0).strip(),
                                 fmt(get(t, "mpi-bench", "lat_med", 1), 0).strip(),
                                 fmt(get(t, "mpi-bench", "lat_p99", 1), 0).strip())
            for t in one))
    section("MPI ping-pong bandwidth (size / one-way median), MB/s", "mpi-bench",
            "pingpong_bw", [s for s in show if s >= 1024])
    section("MPI streaming bandwidth (%s MPI_Isend in flight, then an ack), MB/s"
            % meta.get("window", "W"), "mpi-bench", "bw", show)
    np_sizes = sorted({k[3] for k in rows if k[1] == "netpipe" and k[3] != ""})
    section("NetPIPE (NPopenmpi) latency, one way, us", "netpipe", "lat",
            [s for s in show if s in np_sizes])
    section("NetPIPE bandwidth (ping-pong), MB/s", "netpipe", "bw",
            [s for s in show if s in np_sizes and s >= 1024])
    rma_show = [s for s in (1, 4096, 65536, 1048576) if s in sizes]
    section("MPI_Put + MPI_Win_flush latency, median, us (a round trip)", "mpi-bench",
            "put_lat_med", rma_show)
    section("MPI_Put bandwidth (%s puts, one flush), MB/s" % meta.get("window", "W"),
            "mpi-bench", "put_bw", rma_show)
    section("MPI_Get + MPI_Win_flush latency, median, us (a round trip)", "mpi-bench",
            "get_lat_med", rma_show)
    section("MPI_Get bandwidth (%s gets, one flush), MB/s" % meta.get("window", "W"),
            "mpi-bench", "get_bw", rma_show)

    ib = get("uzura", "perftest", "ib_write_bw", 1048576)
    ib_row = rows.get(("uzura", "perftest", "ib_write_bw", 1048576))
    if ib_row:
        p("")
        p("ib_write_bw 1 MiB on uzura0 in this run (%s): %s MB/s%s"
          % (meta.get("perftest_flags", "?"), fmt(ib, 0).strip(),
             (" (" + ib_row[3] + ")") if ib_row[3] else ""))

    if failures:
        p("")
        p("Runs that failed (findings, not hidden):")
        for tr, what, why, more in failures:
            p("  %s, %s: %s" % (tr, what, why))
            for line in more:
                p("      also: %s" % line)

    p("")
    p("Targets (from the issue; benchmark figures, not test assertions)")
    M = 1048576
    u_lat = get("uzura", "mpi-bench", "lat_med", 1)
    t_lat = get("tcp-virtio", "mpi-bench", "lat_med", 1)
    u_ppbw = get("uzura", "mpi-bench", "pingpong_bw", M)
    t_ppbw = get("tcp-virtio", "mpi-bench", "pingpong_bw", M)
    targets = [
        ("MPI 1 B latency (ping-pong median) <= 1/10 TCP", ratio(u_lat, t_lat), "<=", 0.1),
        ("MPI 1 MiB ping-pong bandwidth >= 10x TCP", ratio(u_ppbw, t_ppbw), ">=", 10.0),
        ("MPI 1 MiB ping-pong bandwidth >= 1/2 ib_write_bw 1 MiB", ratio(u_ppbw, ib),
         ">=", 0.5),
    ]
    for name, v, op, goal in targets:
        if v is None:
            verdict, shown = "not measured", "-"
        else:
            verdict = "met" if (v >= goal if op == ">=" else v <= goal) else "missed"
            shown = fmt_ratio(v, 0)
        p("  %-56s measured %9s  target %s %-6s %s" % (name, shown, op, "%gx" % goal, verdict))
    u_bw = get("uzura", "mpi-bench", "bw", M)
    p("  (streaming 1 MiB bandwidth: uzura %s MB/s = %s TCP, %s ib_write_bw)"
      % (fmt(u_bw, 0).strip(),
         fmt_ratio(ratio(u_bw, get("tcp-virtio", "mpi-bench", "bw", M)), 0),
         fmt_ratio(ratio(u_bw, ib), 0)))
    return "\n".join(out) + "\n"


def series(rows, tr, tool, metric):
    pts = sorted((k[3], v[0]) for k, v in rows.items()
                 if k[0] == tr and k[1] == tool and k[2] == metric and k[3] != "")
    return pts


def plot(rundir, meta, transports, sizes, rows):
    gp = os.path.join(rundir, "mpi.gp")
    png = os.path.join(rundir, "mpi.png")
    all_sizes = sorted({k[3] for k in rows if k[3] != ""})
    if not all_sizes:
        return None
    xlo, xhi = all_sizes[0] / 1.6, all_sizes[-1] * 1.6
    # Panels: (title, unit, [(tool, metric, dashed)])
    panels = [
        ("MPI ping-pong latency, one way, median (mpi-bench)", "latency (us)",
         [("mpi-bench", "lat_med", False)]),
        ("MPI bandwidth (mpi-bench): streaming solid, ping-pong dashed", "bandwidth (MB/s)",
         [("mpi-bench", "bw", False), ("mpi-bench", "pingpong_bw", True)]),
        ("NetPIPE latency, one way", "latency (us)", [("netpipe", "lat", False)]),
        ("NetPIPE bandwidth", "bandwidth (MB/s)", [("netpipe", "bw", False)]),
        ("MPI_Put (solid) and MPI_Get (dashed) + flush latency, median", "latency (us)",
         [("mpi-bench", "put_lat_med", False), ("mpi-bench", "get_lat_med", True)]),
        ("MPI_Put (solid) and MPI_Get (dashed) bandwidth", "bandwidth (MB/s)",
         [("mpi-bench", "put_bw", False), ("mpi-bench", "get_bw", True)]),
    ]
    ib = rows.get(("uzura", "perftest", "ib_write_bw", 1048576))
    ib = ib[0] if ib else None
    with open(gp, "w") as f:
        w = f.write
        w("# Written by bench/mpi-report.py; run with gnuplot.\n")
        blocks = {}
        for tr in transports:
            for _, _, lines in panels:
                for tool, metric, _ in lines:
                    pts = series(rows, tr, tool, metric)
                    if not any(v is not None and v > 0 for _, v in pts):
                        continue
                    name = "$%s_%s_%s" % (re.sub(r"\W", "_", tr), tool.replace("-", "_"),
                                          metric)
                    if name in blocks:
                        continue
                    blocks[name] = pts
                    w("%s << EOD\n" % name)
                    for s, v in pts:
                        w("%d %s\n" % (s, "?" if v is None or v <= 0 else "%.6g" % v))
                    w("EOD\n")
        if ib is not None:
            w("$ib_write_bw << EOD\n1048576 %.6g\nEOD\n" % ib)
        ph, top = 340, 75
        nrows = (len(panels) + 1) // 2
        height = ph * nrows + top
        w(base.png_head(png, height, "title 'uzura MPI benchmark %s, MTU %s%s'"
                        % (meta.get("run", ""), meta.get("mtu", "?"),
                           (", " + meta["note"].replace("'", ""))
                           if meta.get("note") else "")))
        w("set origin 0, %.4f\nset size 1, %.4f\n" % (1 - top / height, 35.0 / height))
        w("unset border\nunset tics\nset xrange [0:1]\nset yrange [0:1]\n")
        w("set key center center horizontal maxrows 1 samplen 3 width 3\n")
        keys = ["NaN with linespoints lw 2 %s title '%s'" % (STYLE.get(tr, ""), tr)
                for tr in transports]
        if ib is not None:
            keys.append("NaN with points pt 3 ps 2 lc rgb 'black' title 'ib_write_bw 1 MiB'")
        w("plot " + ", ".join(keys) + "\n")
        w("unset key\nset border\nset tics\nset grid\n")
        w("set logscale x 2\nset logscale y 10\nset xrange [%g:%g]\n" % (xlo, xhi))
        ticks = [s for s in all_sizes if s == 1 or (s & (s - 1) == 0 and
                                                     int(math.log2(s)) % 2 == 0)]
        if len(ticks) > 12:
            ticks = ticks[::2]
        w("set xtics (%s)\n" % ", ".join('"%s" %d' % (size_name(n), n) for n in ticks))
        w("set format y '%g'\n")
        w("set xlabel 'message size (bytes)'\n")
        for i, (title, ylabel, lines) in enumerate(panels):
            row, col = i // 2, i % 2
            w("set origin %.4f, %.4f\nset size 0.5, %.4f\n"
              % (0.5 * col, (nrows - 1 - row) * ph / height, ph / height))
            w("set title \"%s\"\n" % title)
            w("set ylabel '%s'\n" % ylabel)
            vals = [v for tr in transports for tool, metric, _ in lines
                    for _, v in series(rows, tr, tool, metric) if v is not None and v > 0]
            if "bandwidth" in ylabel and ib is not None:
                vals.append(ib)
            if vals:
                lo = math.floor(math.log10(min(vals)))
                hi = max(math.ceil(math.log10(max(vals))), lo + 1)
                w("set yrange [%g:%g]\n" % (10.0 ** lo, 10.0 ** hi))
            else:
                w("set yrange [1:10]\n")
            plots = []
            for tr in transports:
                for tool, metric, dashed in lines:
                    name = "$%s_%s_%s" % (re.sub(r"\W", "_", tr), tool.replace("-", "_"),
                                          metric)
                    if name in blocks:
                        plots.append("%s using 1:2 with linespoints lw 2 %s%s notitle"
                                     % (name, STYLE.get(tr, ""), " dt 2" if dashed else ""))
            if "bandwidth" in ylabel and ib is not None and lines[0][1] == "bw":
                plots.append("$ib_write_bw using 1:2 with points pt 3 ps 2 "
                             "lc rgb 'black' notitle")
            if not plots:
                plots.append("NaN notitle")
                w("set label 1 'no data' at graph 0.5, 0.5 center\n")
            w("plot " + ", \\\n     ".join(plots) + "\n")
            w("unset label 1\n")
        w("unset multiplot\n")
    return base.gnuplot(gp, png)


def report(rundir):
    meta = base.read_meta(rundir)
    transports, sizes, rows, failures, traffic = collect(rundir, meta)
    csv_path = os.path.join(rundir, "mpi.csv")
    write_csv(csv_path, rows, transports)
    text = table(meta, transports, sizes, rows, failures, traffic)
    with open(os.path.join(rundir, "mpi.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    png = plot(rundir, meta, transports, sizes, rows)
    print("")
    print("CSV:   " + csv_path)
    print("table: " + os.path.join(rundir, "mpi.txt"))
    if png:
        print("plot:  " + png)


def main():
    a = sys.argv[1:]
    if len(a) == 2 and a[0] == "brief":
        print(brief(a[1]))
    elif len(a) == 3 and a[0] == "value" and a[2] == "bw":
        v = base.value(a[1], "bw")
        if v is None:
            sys.exit(1)
        print("%.6g" % v)
    elif len(a) == 2 and a[0] == "report":
        report(a[1])
    else:
        sys.exit("usage: mpi-report.py brief LOG\n"
                 "       mpi-report.py value LOG bw\n"
                 "       mpi-report.py report RUNDIR")


if __name__ == "__main__":
    main()
