#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The report of bench/experiment model:
#
#   model-report.py RUNDIR  from RUNDIR/points.csv and meta.txt:
#                           RUNDIR/table.txt (also printed), plot.gp and
#                           model.png
#
# points.csv: config (icount: -icount and lockstep; icount-host-table: the
# same with every translation at the host-memory time; tcg: plain TCG,
# the model unsynchronised), test (write_lat, write_bw), size, iters,
# t_min_us, t_typical_us, t_avg_us, p99_us (write_lat), mb_s (write_bw).
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import fmt, gnuplot, png_head, read_meta, run_line, write_table  # noqa: E402

# The UZURA paper's table 5 (us), for a 64-byte message.
PAPER_STAGES = [
    ("doorbell (register write)", 0.78),
    ("DMA host -> NIC", 0.76),
    ("sending FPGA", 0.25),
    ("10GbE MAC", 1.56),
    ("receiving FPGA", 0.50),
    ("DMA NIC -> host", 0.18),
]
PAPER_LAT = 4.03
PAPER_BW_4K = 1.02e3            # MB/s, its table 6: 4 KiB in 4.02 us

# The device's defaults (docs/device-spec.md 8.20), in ns and ps per byte.
P = dict(doorbell=780, dma_rd=708, dma_rd_ps=809, xlat_hit=40,
         xlat_miss=320, nic_tx=250, link=1560, mbps=10000, nic_rx=500,
         dma_wr=121, dma_wr_ps=920)
ROCE = 14 + 20 + 8 + 12 + 4     # Ethernet, IPv4, UDP, BTH, ICRC
RETH = 16
MTU = 4096


def frames(size):
    """Lengths of the frames of one RDMA WRITE of @size bytes."""
    out, off = [], 0
    while True:
        n = min(MTU, size - off)
        out.append(ROCE + n + (RETH if off == 0 else 0))
        off += n
        if off >= size:
            return out


def model_lat(xlat_ns):
    """One-way latency of a 2-byte WRITE by the model, in us: the stages,
    and what each one takes."""
    n = frames(2)[0]
    stages = [
        ("doorbell", P["doorbell"]),
        ("translation", xlat_ns),
        ("DMA host -> NIC", P["dma_rd"] + n * P["dma_rd_ps"] // 1000),
        ("sending NIC", P["nic_tx"]),
        ("link", P["link"]),
        ("receiving NIC", P["nic_rx"]),
        ("DMA NIC -> host", P["dma_wr"] + n * P["dma_wr_ps"] // 1000),
    ]
    return sum(t for _, t in stages) / 1000, stages


def model_bw(size):
    """MB/s of back-to-back WRITEs of @size bytes: the slowest of the
    serial stages (host -> NIC DMA, wire, NIC -> host DMA) sets the pace;
    a frame's translation overlaps the previous frame's DMA."""
    fr = frames(size)
    rd = sum(P["dma_rd"] + n * P["dma_rd_ps"] / 1000 for n in fr)
    wire = sum(n * 8000 / P["mbps"] for n in fr)
    wr = sum(P["dma_wr"] + n * P["dma_wr_ps"] / 1000 for n in fr)
    return size / max(rd, wire, wr) * 1000


def load(rundir):
    lat, bw = {}, {}
    with open(os.path.join(rundir, "points.csv")) as f:
        for r in csv.DictReader(f):
            if r["test"] == "write_lat":
                lat[r["config"]] = {k: float(r[k]) for k in
                                    ("t_min_us", "t_typical_us", "t_avg_us",
                                     "p99_us")}
            else:
                bw[int(r["size"])] = float(r["mb_s"])
    return lat, bw


def lockstep(rundir, config):
    """The counters './uzura model' printed after a configuration's runs:
    {name: [node 1's, node 2's]}."""
    out = {}
    try:
        with open(os.path.join(rundir, "logs", "model-%s.log" % config)) as f:
            for line in f:
                k = line.split()
                if len(k) == 2 and k[0].startswith("model-") and k[1].isdigit():
                    out.setdefault(k[0], []).append(int(k[1]))
    except OSError:
        pass
    return out


def within(v, ref):
    return "" if v is None else "%+.1f %%" % (100 * (v - ref) / ref)


def main():
    rundir = sys.argv[1]
    meta = read_meta(rundir)
    lat, bw = load(rundir)
    m_lat, stages = model_lat(P["xlat_hit"])
    m_lat_host, _ = model_lat(P["xlat_miss"])
    out = []
    w = out.append
    w("uzura's timing model with the UZURA paper's stage times (%s)"
      % run_line(meta))
    w("")
    w("One-way latency, ib_write_lat 2 B (us)")
    w("  the paper's table 5 (64-byte message):")
    for name, t in PAPER_STAGES:
        w("    %-28s %5.2f" % (name, t))
    w("    %-28s %5.2f" % ("sum", PAPER_LAT))
    w("  the model's stages for this frame (%d bytes):" % frames(2)[0])
    for name, t in stages:
        w("    %-28s %5.2f" % (name, t / 1000))
    w("    %-28s %5.2f" % ("sum", m_lat))
    w("")
    w("  run                           t_min  typical    avg    p99"
      "  vs paper")
    names = [("icount", "-icount, lockstep"),
             ("icount-host-table", "-icount, lockstep, host table"),
             ("tcg", "plain TCG, unsynchronised")]
    for cfg, label in names:
        r = lat.get(cfg)
        if r:
            w("  %-28s %s %s %s %s  %s" % (
                label, fmt(r["t_min_us"], 6), fmt(r["t_typical_us"], 8),
                fmt(r["t_avg_us"], 6), fmt(r["p99_us"], 6),
                within(r["t_typical_us"], PAPER_LAT)))
    for cfg, label in names[:2]:
        c = lockstep(rundir, cfg)
        if c.get("model-late"):
            w("  %s: frames after their time %s, quanta %s" % (
                label, " and ".join(map(str, c["model-late"])),
                " and ".join(map(str, c.get("model-quanta", [])))))
    if "icount" in lat:
        w("  guest software in the lockstep run (typical - model): %.2f us"
          % (lat["icount"]["t_typical_us"] - m_lat))
    if "icount-host-table" in lat and "icount" in lat:
        w("  every translation from host memory adds %.2f us (model: %.2f)"
          % (lat["icount-host-table"]["t_typical_us"] -
             lat["icount"]["t_typical_us"], m_lat_host - m_lat))
    w("")
    w("Bandwidth, ib_write_bw, -icount and lockstep (MB/s = 10^6 B/s)")
    w("     size  measured   model  measured/model")
    for s in sorted(bw):
        w("  %7d %s %s %s" % (s, fmt(bw[s], 9), fmt(model_bw(s), 7),
                              fmt(bw[s] / model_bw(s), 10)))
    if 4096 in bw:
        w("  4 KiB against the paper's %.0f MB/s (table 6): %s"
          % (PAPER_BW_4K, within(bw[4096], PAPER_BW_4K)))
    w("")
    w("model: doorbell %(doorbell)d ns; DMA host->NIC %(dma_rd)d ns + "
      "%(dma_rd_ps)d ps/B; translation %(xlat_hit)d ns on the NIC, "
      "%(xlat_miss)d ns from host memory;" % P)
    w("sending NIC %(nic_tx)d ns; link %(link)d ns at %(mbps)d Mb/s; "
      "receiving NIC %(nic_rx)d ns; DMA NIC->host %(dma_wr)d ns + "
      "%(dma_wr_ps)d ps/B" % P)
    write_table(rundir, out)

    dat = os.path.join(rundir, "plot.dat")
    with open(dat, "w") as f:
        f.write("# size measured_mb_s model_mb_s\n")
        for s in sorted(bw):
            f.write("%d %.1f %.1f\n" % (s, bw[s], model_bw(s)))
    lat_dat = os.path.join(rundir, "lat.dat")
    with open(lat_dat, "w") as f:
        f.write("# label us\n")
        f.write("\"paper\" %.2f\n\"model\" %.2f\n" % (PAPER_LAT, m_lat))
        for cfg, label in names:
            if cfg in lat:
                f.write("\"%s\" %.2f\n" % (label.replace(", ", "\\n"),
                                           lat[cfg]["t_typical_us"]))
    png = os.path.join(rundir, "model.png")
    gp = os.path.join(rundir, "plot.gp")
    with open(gp, "w") as f:
        f.write("# Written by bench/model-report.py; run with gnuplot.\n")
        f.write(png_head(png, 450, "layout 1,2 title 'uzura timing model "
                         "with the UZURA paper''s stage times (%s)'"
                         % meta.get("date", "")))
        # Log scale: plain TCG's tens of microseconds beside the model's 4.
        f.write("set grid\nset title 'ib_write_lat 2 B, typical one way'\n"
                "set ylabel 'us (log scale)'\nset style fill solid 0.6\n"
                "set boxwidth 0.6\nset logscale y\nset yrange [1:200]\n"
                "set bmargin 5\nunset key\n"
                "plot '%s' u 0:2:xtic(1) w boxes, '' u 0:2:(sprintf('%%.2f',"
                "$2)) w labels offset 0,0.8\n" % lat_dat)
        f.write("set title 'ib_write_bw, -icount and lockstep'\n"
                "unset logscale y\nset yrange [0:*]\nset logscale x 2\nset xlabel 'message size (bytes)'\n"
                "set ylabel 'MB/s'\nset key bottom right opaque box\n"
                "set xtics auto\n"
                "plot '%s' u 1:2 w lp t 'measured', '' u 1:3 w l dt 2 "
                "t 'model', '-' w p pt 7 ps 1.5 t 'paper (4 KiB)'\n"
                "4096 %.0f\ne\n" % (dat, PAPER_BW_4K))
        f.write("unset multiplot\n")
    gnuplot(gp, png)


if __name__ == "__main__":
    main()
