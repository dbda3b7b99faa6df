"""Adds latency and jitter to the packets an iptables rule queues to it
(`-j NFQUEUE --queue-num Q --queue-bypass`), as `tc qdisc ... netem delay D
jitter J` would, for kernels
without the netem qdisc: it holds each packet for D +- J (uniform) and then
lets it go, in the order they came (a link that delays, not one that
reorders). It speaks the kernel's nfnetlink_queue protocol directly over a
netlink socket, so it needs no library; run it in the network namespace
whose rule queues the packets (the queue belongs to the namespace), as root.
It holds only packet ids (metadata mode), never their contents.

    python3 tests/cluster/delay_queue.py --queue 0 --delay-ms 20 --jitter-ms 10

It prints "ready" once bound; until then, and once it exits, the rule's
`--queue-bypass` lets packets through undelayed.
"""
import argparse
import collections
import random
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
MSG_PACKET, MSG_VERDICT, MSG_CONFIG = 0, 1, 2
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
CFG_CMD, CFG_PARAMS, CFG_QUEUE_MAXLEN = 1, 2, 3
CMD_BIND = 1
COPY_META = 1
PACKET_HDR = 1
VERDICT_HDR = 2
NF_ACCEPT = 1


def attr(kind, payload):
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + b"\0" * (-size % 4)


def message(kind, queue, attrs, flags=NLM_F_REQUEST, seq=0):
    body = struct.pack("!BBH", socket.AF_UNSPEC, 0, queue) + b"".join(attrs)
    return struct.pack("=IHHII", 16 + len(body), NFNL_SUBSYS_QUEUE << 8 | kind,
                       flags, seq, 0) + body


def attributes(data):
    out, at = {}, 0
    while at + 4 <= len(data):
        size, kind = struct.unpack_from("=HH", data, at)
        if size < 4:
            break
        out[kind & 0x7FFF] = data[at + 4:at + size]
        at += size + (-size % 4)
    return out


def configure(sock, queue, attrs, seq):
    """Sends one config message and raises on the kernel's error reply."""
    sock.send(message(MSG_CONFIG, queue, attrs, NLM_F_REQUEST | NLM_F_ACK,
                      seq))
    data = sock.recv(65536)
    _, kind, _, _, _ = struct.unpack_from("=IHHII", data)
    if kind == NLMSG_ERROR:
        (err,) = struct.unpack_from("=i", data, 16)
        if err:
            raise OSError(-err, f"nfnetlink_queue config: {err}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queue", type=int, default=0)
    ap.add_argument("--delay-ms", type=float, required=True)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((0, 0))
    configure(sock, args.queue,
              [attr(CFG_CMD, struct.pack("!BBH", CMD_BIND, 0,
                                         socket.AF_INET))], 1)
    configure(sock, args.queue,
              [attr(CFG_PARAMS, struct.pack("!IB", 0, COPY_META)),
               attr(CFG_QUEUE_MAXLEN, struct.pack("!I", 16384))], 2)
    print("ready", flush=True)
    held = collections.deque()  # (due, packet id), due never decreasing
    last_due = 0.0
    while True:
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, pid = held.popleft()
            sock.send(message(MSG_VERDICT, args.queue, [attr(
                VERDICT_HDR, struct.pack("!II", NF_ACCEPT, pid))]))
        wait = max(0.0, held[0][0] - now) if held else 1.0
        if not select.select([sock], [], [], wait)[0]:
            continue
        try:
            data = sock.recv(1 << 16)
        except OSError:  # ENOBUFS: the kernel dropped some; go on
            continue
        at = 0
        while at + 16 <= len(data):
            size, kind = struct.unpack_from("=IH", data, at)
            if size < 16:
                break
            if kind == NFNL_SUBSYS_QUEUE << 8 | MSG_PACKET:
                hdr = attributes(data[at + 20:at + size]).get(PACKET_HDR)
                if hdr:
                    (pid,) = struct.unpack_from("!I", hdr)
                    delay = args.delay_ms + rng.uniform(-args.jitter_ms,
                                                        args.jitter_ms)
                    last_due = max(last_due, time.monotonic() +
                                   max(0.0, delay) / 1000)
                    held.append((last_due, pid))
            at += size + (-size % 4)


if __name__ == "__main__":
    main()
