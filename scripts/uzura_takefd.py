#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run a command with listening sockets taken from a running process.

    uzura_takefd.py PID PORT... -- COMMAND [ARG...]

For each PORT, the TCP socket of process PID that listens on it becomes
file descriptor 100, 101, ... of COMMAND (pidfd_getfd(2), Linux 5.6:
the caller needs ptrace rights over PID, as root has).  ./uzura migrate
starts the new QEMU of node 1 on the stream link this way: QEMU's stream
netdev takes a listening socket as addr.type=fd, and the port stays
open while the node moves, so node 2 reconnects to it once the old QEMU
is gone.  Both processes hold the socket meanwhile; QEMU's stream server
accepts only while it has no connection, so the old one, connected,
leaves it to the new one.
"""

import ctypes
import os
import sys

FIRST_FD = 100
SYS_PIDFD_GETFD = 438       # x86-64, arm64 and the other generic tables


def die(msg):
    print("uzura_takefd: %s" % msg, file=sys.stderr)
    sys.exit(1)


def socket_fds(pid):
    """Process @pid's sockets: {inode: its file descriptor}."""
    d = "/proc/%d/fd" % pid
    fds = {}
    for name in os.listdir(d):
        try:
            link = os.readlink(os.path.join(d, name))
        except OSError:
            continue
        if link.startswith("socket:["):
            fds[link[8:-1]] = int(name)
    return fds


def listening_fd(pid, port):
    """Process @pid's descriptor of a TCP socket listening on @port."""
    fds = socket_fds(pid)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    local, state, inode = fields[1], fields[3], fields[9]
                    if (state == "0A" and inode in fds and
                            int(local.split(":")[1], 16) == port):
                        return fds[inode]
        except FileNotFoundError:
            continue
    return None


def main():
    args = sys.argv[1:]
    if "--" not in args or args.index("--") < 2:
        die("usage: uzura_takefd.py PID PORT... -- COMMAND [ARG...]")
    sep = args.index("--")
    pid, ports, command = int(args[0]), args[1:sep], args[sep + 1:]
    if not command:
        die("no command")
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    for k, port in enumerate(ports):
        fd = listening_fd(pid, int(port))
        if fd is None:
            die("process %d has no socket listening on port %s" % (pid, port))
        got = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if got < 0:
            err = ctypes.get_errno()
            die("cannot take port %s's socket from process %d: %s (it "
                "takes ptrace rights over the process: root, or "
                "kernel.yama.ptrace_scope=0)" % (port, pid, os.strerror(err)))
        if got != FIRST_FD + k:
            os.dup2(got, FIRST_FD + k)
            os.close(got)
        else:
            os.set_inheritable(got, True)
    os.close(pidfd)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
