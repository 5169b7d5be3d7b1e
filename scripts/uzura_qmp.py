#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# uzura_qmp.py: the project's one QMP client, on QEMU's own library.
#
# The launcher, the benchmarks and the tests talk to a node's QEMU over
# QMP.  They had three clients of their own (a Python heredoc in
# ./uzura's cmd_qmp, socat in its qmp(), another heredoc in bench/rate);
# this module replaces them, on python/qemu/qmp of the QEMU tree the
# build unpacks (build/qemu-src/python), so that nothing is installed and
# the protocol is QEMU's own code's business.  It drives the async
# QMPClient on an event loop of its own rather than qemu.qmp.legacy's
# QEMUMonitorProtocol, whose connect() takes no timeout: ./uzura down
# must give up on a hung QEMU (--timeout) as socat -t 2 did.
#
# From Python:
#     with uzura_qmp.connect(sock) as m:
#         m.qmp("qom-get", path=uzura_qmp.NIC, property="link")
# qmp() returns the command's return value or raises QMPError (an
# ExecuteError with QEMU's error text as its message).
#
# From the shell (./uzura, bench/): uzura_qmp.py [--timeout S] SOCK MODE ...
#     stats | capture [FILE] | model [sync=on|off] | trace [EVENT=on|off]...
#     | cc [NAME=VALUE]... | fault [NAME=VALUE... | rule RULE | rules FILE|-|clear]
#     as ./uzura's commands of those names; or
#     raw COMMAND [ARGUMENTS]: one command, ARGUMENTS a JSON object; its
#     result is printed as JSON.
# And uzura_qmp.py migrate SRC DST URI [PID]: move the VM of the QEMU at
#     QMP socket SRC to the one at DST (started with -incoming defer)
#     through URI, and kill SRC's process PID the moment DST runs; prints
#     the time it took (and without PID, SRC's RAM figures) as JSON
#     (./uzura migrate).
# uzura_qmp.py save SOCK FILE [SOCK FILE]...: stop every VM, then save
#     each one's state to its FILE; they stay stopped.  uzura_qmp.py cont
#     SOCK...: run them again.  uzura_qmp.py incoming SOCK...: wait until
#     each (started with -incoming file:FILE -S) has loaded, then run them
#     all (./uzura snapshot save, up --from).
# An error prints "uzura: " and its text on stderr and exits 1.

import asyncio
import json
import os
import sys

_top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _build in (os.environ.get("UZURA_BUILD"), os.path.join(_top, "build")):
    if _build and os.path.isdir(os.path.join(_build, "qemu-src/python/qemu")):
        sys.path.insert(0, os.path.join(_build, "qemu-src/python"))
        break
try:
    from qemu.qmp import QMPClient, QMPError
except ImportError:
    sys.exit("uzura: no QEMU python library in build/qemu-src/python "
             "(make sources)")

# The uzura device of a node (its -device id).
NIC = "/machine/peripheral/uz0"


class Monitor:
    """A negotiated QMP session with one QEMU; timeout in s, or None."""

    def __init__(self, sock, timeout=None):
        self.timeout = timeout
        self.loop = asyncio.new_event_loop()
        self.client = QMPClient("uzura")
        try:
            self._run(self.client.connect(sock))
        except BaseException:
            self.loop.close()
            raise

    def _run(self, coro):
        return self.loop.run_until_complete(
            asyncio.wait_for(coro, self.timeout))

    def qmp(self, cmd, **args):
        return self._run(self.client.execute(cmd, args))

    def close(self):
        try:
            self._run(self.client.disconnect())
        except (QMPError, OSError, EOFError):
            pass            # it went first (quit)
        finally:
            self.loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def connect(sock, timeout=None):
    """A Monitor on the QMP socket sock (a node's qmp.sock)."""
    return Monitor(sock, timeout)


def capture(qmp, args):
    # A filter-dump on the link's netdev sees each frame once: those the
    # NIC sends as they enter the netdev, those it receives as they leave.
    if args:
        qmp("object-add", **{"qom-type": "filter-dump", "id": "uzura-capture",
                             "netdev": "rdma", "queue": "all",
                             "file": args[0], "maxlen": 65535})
    else:
        qmp("object-del", id="uzura-capture")


def stats(qmp, args):
    props = qmp("qom-list", path=NIC) or []
    for name in sorted(p["name"] for p in props
                       if p["type"] == "uint64" and "-" not in p["name"]):
        print("%-24s %d" % (name, qmp("qom-get", path=NIC, property=name)))


def model(qmp, args):
    # The timing model (docs/device-spec.md 8.20): lockstep on or off.
    for arg in args:
        if arg not in ("sync=on", "sync=off"):
            sys.exit("uzura: model takes sync=on or sync=off")
        qmp("qom-set", path=NIC, property="model-sync", value=arg == "sync=on")
    for name in ("model", "model-sync", "model-quanta", "model-late",
                 "model-drops", "model-bad"):
        print("%-24s %s" % (name, json.dumps(qmp("qom-get", path=NIC,
                                                     property=name))))


def trace(qmp, args):
    # QEMU's own trace control: the events go to the node's -D log.
    for arg in args:
        name, sep, val = arg.partition("=")
        if not name.startswith("uzura_") or val not in ("on", "off"):
            sys.exit("uzura: trace takes EVENT=on or EVENT=off, EVENT a name "
                     "or pattern of hw/rdma/uzura/trace-events")
        if not qmp("trace-event-get-state", name=name):
            sys.exit("uzura: trace: no event %s" % name)
        qmp("trace-event-set-state", name=name, enable=val == "on")
    for ev in qmp("trace-event-get-state", name="uzura_*"):
        if ev["state"] == "enabled":
            print(ev["name"])


# Congestion control's knobs (docs/device-spec.md 9.1.2), mlx5's names.
CC_KNOBS = ["roce_np_enable", "roce_rp_enable", "min_time_between_cnps",
            "cnp_dscp", "rpg_time_reset", "rpg_byte_reset", "rpg_threshold",
            "rpg_max_rate", "rpg_ai_rate", "rpg_hai_rate", "rpg_gd",
            "rpg_min_dec_fac", "rpg_min_rate", "rate_to_set_on_first_cnp",
            "rate_reduce_monitor_period", "dce_tcp_g", "dce_tcp_rtt",
            "initial_alpha_value"]


def cc(qmp, args):
    for arg in args:
        name, sep, val = arg.partition("=")
        if name not in CC_KNOBS or not sep:
            sys.exit("uzura: cc takes NAME=VALUE with NAME one of " +
                     ", ".join(CC_KNOBS))
        if name.endswith("_enable"):
            if val not in ("on", "off"):
                sys.exit("uzura: %s=on or %s=off" % (name, name))
            value = val == "on"
        else:
            try:
                value = int(val, 10)
            except ValueError:
                sys.exit("uzura: %s: not a number: %s" % (name, val))
        qmp("qom-set", path=NIC, property=name, value=value)
    for name in CC_KNOBS:
        v = qmp("qom-get", path=NIC, property=name)
        print("%-28s %s" % (name, ("on" if v else "off")
                            if isinstance(v, bool) else v))


# Fault injection's settings (docs/device-spec.md 7.5), the first four
# probabilities.
FAULT_SETTINGS = ["fault-drop", "fault-dup", "fault-reorder", "fault-corrupt",
                  "fault-delay-us", "fault-seed", "link",
                  "fault-flap-period-us", "fault-flap-down-us", "recovery",
                  "ack-timeout-max-us", "sr-rto-low-us", "tx-batch",
                  "rx-batch"]


def fault(qmp, args):
    def rules_set(text):
        qmp("qom-set", path=NIC, property="fault-rules", value=text)

    if args[:1] == ["rule"]:
        # One more rule after those loaded (their counts start again).
        if len(args) < 2:
            sys.exit("uzura: fault I rule MATCH... ACTION")
        rules_set(qmp("qom-get", path=NIC, property="fault-rules") +
                  " ".join(args[1:]) + "\n")
        args = []
    elif args[:1] == ["rules"]:
        if len(args) != 2:
            sys.exit("uzura: fault I rules FILE|-|clear")
        if args[1] == "clear":
            rules_set("")
        elif args[1] == "-":
            rules_set(sys.stdin.read())
        else:
            try:
                with open(args[1]) as f:
                    text = f.read()
            except OSError as e:
                sys.exit("uzura: %s" % e)
            rules_set(text)
        args = []
    for arg in args:
        name, sep, val = arg.partition("=")
        if name == "flap" and sep:
            # flap=DOWN_MS[/PERIOD_MS] or flap=off
            down, _, period = val.partition("/")
            try:
                down = 0 if down == "off" else int(float(down) * 1000)
                period = int(float(period) * 1000) if period else 0
            except ValueError:
                sys.exit("uzura: flap=DOWN_MS[/PERIOD_MS] or flap=off")
            qmp("qom-set", path=NIC, property="fault-flap-down-us", value=0)
            qmp("qom-set", path=NIC, property="fault-flap-period-us",
                value=period)
            qmp("qom-set", path=NIC, property="fault-flap-down-us", value=down)
            continue
        if name not in FAULT_SETTINGS or not sep:
            sys.exit("uzura: fault takes NAME=VALUE with NAME one of " +
                     ", ".join(FAULT_SETTINGS + ["flap"]) +
                     ", or 'rule RULE', or 'rules FILE|-|clear'")
        if name in ("link", "tx-batch", "rx-batch"):
            if val not in ("on", "off"):
                sys.exit("uzura: %s=on or %s=off" % (name, name))
            value = val == "on"
        elif name == "recovery":
            value = val
        else:
            try:
                value = (float(val) if name in FAULT_SETTINGS[:4]
                         else int(val, 0))
            except ValueError:
                sys.exit("uzura: %s: not a number: %s" % (name, val))
        qmp("qom-set", path=NIC, property=name, value=value)
    for name in FAULT_SETTINGS:
        print("%-24s %s" % (name, qmp("qom-get", path=NIC, property=name)))
    rules = qmp("qom-get", path=NIC, property="fault-rules")
    print("fault-rules%s" % ("" if rules else "              (none)"))
    for i, line in enumerate(rules.splitlines()):
        print("  %2d  %s" % (i + 1, line))


def raw(qmp, args):
    if not 1 <= len(args) <= 2:
        sys.exit("uzura: raw COMMAND [ARGUMENTS as a JSON object]")
    try:
        arguments = json.loads(args[1]) if len(args) == 2 else {}
    except ValueError as e:
        sys.exit("uzura: raw: arguments: %s" % e)
    print(json.dumps(qmp(args[0], **arguments)))


MODES = {"capture": capture, "stats": stats, "model": model, "trace": trace,
         "cc": cc, "fault": fault, "raw": raw}


# A live migration's settings: the blackout (the VM stopped) as short as
# the last copy of the RAM the guest dirtied allows, at 512 MiB/s (QEMU's
# default cap, 128 MiB/s, is for a network it shares; no cap at all let
# the copy take both cores of a small host, and the VMs' RC connections
# went without ACKs for longer than their retries last).  Its threads keep
# their priority: at nice 19 the one that holds the old QEMU's main lock
# through the last copy waited behind the VMs, and the stop grew to
# 400 ms.
MIGRATE_PARAMS = {"downtime-limit": 50, "max-bandwidth": 512 << 20}
MIGRATE_WAIT_S = 600


def _resume_source(s):
    # A migration the new side did not take: the old side may still send
    # (cancel it), or have sent everything and stopped, "completed" as far
    # as it knows (the stream has no return path); either way its VM runs
    # on, as it was.
    _cancel({"old side": s})
    if not s.qmp("query-status").get("running"):
        s.qmp("cont")


def migrate(argv):
    import signal
    import time
    if len(argv) not in (3, 4):
        sys.exit("usage: uzura_qmp.py migrate SRC-SOCK DST-SOCK URI [PID]")
    src, dst, uri = argv[:3]
    last = {}
    total = 0
    try:
        with connect(dst, 10) as d, connect(src, 10) as s:
            d.qmp("migrate-incoming", uri=uri)
            s.qmp("migrate-set-parameters", **MIGRATE_PARAMS)
            s.qmp("migrate", uri=uri)
            t0 = time.monotonic()
            while True:
                # The new side only: once it runs, the old one is done
                # with, even before it says so itself.  The old one's
                # monitor may not answer for a few hundred milliseconds
                # while it finishes (QEMU holds its main loop), and a
                # failure there ends the stream, which the new side sees.
                try:
                    status = d.qmp("query-migrate").get("status")
                except (QMPError, OSError, EOFError):
                    # The new side quit: its load failed, or the old
                    # side's migration did (it ends the stream).
                    status = "failed"
                if status in ("completed", "failed"):
                    break
                if time.monotonic() - t0 > MIGRATE_WAIT_S:
                    s.qmp("migrate_cancel")
                    sys.exit("uzura: migration still %s after %d s: "
                             "cancelled" % (status, MIGRATE_WAIT_S))
                time.sleep(0.01)
            total = time.monotonic() - t0
            if status == "completed" and len(argv) == 4:
                # At once: until the old process is gone, its link peer
                # sends to a stopped VM, and the new one waits for the
                # link (the shm link takes one peer at a time).  Its VM
                # stopped and its disk let go, it has nothing to save.
                os.kill(int(argv[3]), signal.SIGKILL)
            elif status != "completed":
                why = s.qmp("query-migrate").get("error-desc")
                try:
                    why = why or d.qmp("query-migrate").get("error-desc")
                except (QMPError, OSError, EOFError):
                    pass
                _resume_source(s)
                sys.exit("uzura: migration %s: %s" %
                         (status, why or "no reason given"))
            else:
                last = s.qmp("query-migrate")
    except QMPError as e:
        sys.exit("uzura: %s" % e)
    except (TimeoutError, OSError) as e:
        sys.exit("uzura: migration: %s" % e)
    print(json.dumps({"total-time": int(total * 1000),
                      "ram": last.get("ram", {})}))


# Saving a snapshot: the VMs are stopped, so nothing is gained by capping
# the copy as a live migration must (QEMU's default cap is 128 MiB/s).
SAVE_PARAMS = {"max-bandwidth": 64 << 30}


def _wait_done(mons, what):
    # Every migration of mons (QMP socket -> Monitor) until it completes;
    # exits naming the first QEMU whose migration failed.
    import time
    t0 = time.monotonic()
    pending = dict(mons)
    while pending:
        for sock, m in list(pending.items()):
            info = m.qmp("query-migrate")
            status = info.get("status")
            if status == "completed":
                del pending[sock]
            elif status in ("failed", "cancelled"):
                sys.exit("uzura: %s: %s %s: %s" %
                         (sock, what, status,
                          info.get("error-desc") or "no reason given"))
        if pending and time.monotonic() - t0 > MIGRATE_WAIT_S:
            sys.exit("uzura: %s: %s not done after %d s" %
                     (" ".join(pending), what, MIGRATE_WAIT_S))
        time.sleep(0.05)


def _monitors(socks, fn):
    mons = {}
    try:
        for sock in socks:
            mons[sock] = connect(sock, 30)
        fn(mons)
    except QMPError as e:
        sys.exit("uzura: %s" % e)
    except (TimeoutError, OSError, EOFError) as e:
        sys.exit("uzura: %s" % (e or "no answer from QEMU"))
    finally:
        for m in mons.values():
            m.close()


def _cancel(mons):
    # After one failed: end the others' migrations, and wait until they
    # have ended, so that what runs them again (cont) is not undone by a
    # migration that completes after it (QEMU stops a VM whose migration
    # completes).
    import time
    for m in mons.values():
        if m.qmp("query-migrate").get("status") not in ENDED:
            m.qmp("migrate_cancel")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:
        if all(m.qmp("query-migrate").get("status") in ENDED
               for m in mons.values()):
            return
        time.sleep(0.05)


ENDED = (None, "none", "completed", "failed", "cancelled")


def save(argv):
    # save SOCK FILE...: stop every VM first, so that the files hold one
    # moment of the whole cluster, then write each one's state to its FILE
    # (QEMU's migration to a file).  The VMs stay stopped (cont).
    if not argv or len(argv) % 2:
        sys.exit("usage: uzura_qmp.py save SOCK FILE [SOCK FILE]...")
    files = dict(zip(argv[0::2], argv[1::2]))

    def run(mons):
        for m in mons.values():
            m.qmp("stop")
        try:
            for sock, m in mons.items():
                m.qmp("migrate-set-parameters", **SAVE_PARAMS)
                m.qmp("migrate", uri="file:" + files[sock])
            _wait_done(mons, "saving its state")
        except (SystemExit, QMPError):
            _cancel(mons)
            raise
    _monitors(files, run)


def cont(argv, incoming):
    # cont SOCK...: run every VM again, each on its own (one that does not
    # answer leaves the others running); incoming SOCK...: first wait for
    # each one's incoming migration (-incoming file:..., -S) to load.
    if not argv:
        sys.exit("usage: uzura_qmp.py cont|incoming SOCK...")

    def run(mons):
        if incoming:
            _wait_done(mons, "loading its state")
        for m in mons.values():
            m.qmp("cont")
    if incoming:
        return _monitors(argv, run)
    failed = []
    for sock in argv:
        try:
            with connect(sock, 30) as m:
                m.qmp("cont")
        except (QMPError, TimeoutError, OSError, EOFError) as e:
            failed.append("%s: %s" % (sock, e or "no answer"))
    if failed:
        sys.exit("uzura: not run again: " + "; ".join(failed))


def main(argv):
    if argv[:1] == ["migrate"]:
        return migrate(argv[1:])
    if argv[:1] == ["save"]:
        return save(argv[1:])
    if argv[:1] in (["cont"], ["incoming"]):
        return cont(argv[1:], argv[0] == "incoming")
    timeout = None
    if argv[:1] == ["--timeout"] and len(argv) > 1:
        timeout = float(argv[1])
        argv = argv[2:]
    if len(argv) < 2 or argv[1] not in MODES:
        sys.exit("usage: uzura_qmp.py [--timeout S] SOCK %s ..."
                 % "|".join(MODES))
    try:
        with connect(argv[0], timeout) as m:
            MODES[argv[1]](m.qmp, argv[2:])
    except QMPError as e:
        sys.exit("uzura: %s" % e)
    except TimeoutError:
        sys.exit("uzura: %s: no answer in %g s" % (argv[0], timeout))


if __name__ == "__main__":
    main(sys.argv[1:])
