#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""Send one crafted tunnelled frame out of an interface, as an attacker on
a backends' segment would: IPIP / IPv6-in-IP or GUE (include/gue.h, with
xlb's field) around a UDP or TCP packet, every address the caller's.

craft_frame.py IFACE DMAC KIND OUTER_SRC OUTER_DST INNER_SRC INNER_DST
               [--hops N] [--prev ADDR] [--proto tcp|udp] [--port P]

KIND is ipip (the inner family picks IPIP or IPv6-in-IP) or gue. With
--prev the GUE field names ADDR (its family) as the previous backend. The
outer family is OUTER_SRC's. Checksums are valid.
"""
import argparse
import ipaddress
import socket
import struct


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def pseudo(src, dst, proto, length):
    if src.version == 4:
        return src.packed + dst.packed + struct.pack("!BBH", 0, proto, length)
    return src.packed + dst.packed + struct.pack("!IxxxB", length, proto)


def ip_header(src, dst, proto, payload):
    if src.version == 4:
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000,
                        64, proto, 0, src.packed, dst.packed)
        return h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), proto, 64,
                       src.packed, dst.packed)


def l4(src, dst, proto, sport, dport):
    if proto == socket.IPPROTO_UDP:
        body = b"x" * 32
        h = struct.pack("!HHHH", sport, dport, 8 + len(body), 0)
    else:
        body = b""
        h = struct.pack("!HHIIBBHHH", sport, dport, 1, 1, 5 << 4, 0x10, 512, 0, 0)
    seg = h + body
    c = csum(pseudo(src, dst, proto, len(seg)) + seg) or 0xFFFF
    off = 6 if proto == socket.IPPROTO_UDP else 16
    return seg[:off] + struct.pack("!H", c) + seg[off + 2:]


def main():
    p = argparse.ArgumentParser()
    for a in ("iface", "dmac", "kind", "outer_src", "outer_dst", "inner_src", "inner_dst"):
        p.add_argument(a)
    p.add_argument("--hops", type=int, default=0)
    p.add_argument("--prev")
    p.add_argument("--proto", default="tcp")
    p.add_argument("--port", type=int, default=6080)
    a = p.parse_args()

    osrc, odst = ipaddress.ip_address(a.outer_src), ipaddress.ip_address(a.outer_dst)
    isrc, idst = ipaddress.ip_address(a.inner_src), ipaddress.ip_address(a.inner_dst)
    proto = socket.IPPROTO_TCP if a.proto == "tcp" else socket.IPPROTO_UDP
    inner = l4(isrc, idst, proto, 40123, 80)
    inner = ip_header(isrc, idst, proto, inner) + inner
    inner_proto = 4 if isrc.version == 4 else 41

    if a.kind == "ipip":
        outer = ip_header(osrc, odst, inner_proto, inner) + inner
    else:
        field = b""
        if a.prev is not None:
            prev = ipaddress.ip_address(a.prev)
            field = struct.pack("!BBBB", 0x58, a.hops, prev.version, 0) + \
                prev.packed.ljust(16, b"\0")
        else:
            field = struct.pack("!BBBB", 0x58, a.hops, 0, 0) + b"\0" * 16
        gue = struct.pack("!BBH", len(field) // 4, inner_proto, 0) + field + inner
        udp = struct.pack("!HHHH", 49159, a.port, 8 + len(gue), 0) + gue
        if osrc.version == 6:
            c = csum(pseudo(osrc, odst, socket.IPPROTO_UDP, len(udp)) + udp) or 0xFFFF
            udp = udp[:6] + struct.pack("!H", c) + udp[8:]
        outer = ip_header(osrc, odst, socket.IPPROTO_UDP, udp) + udp

    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    src_mac = s.getsockname()[4]
    ethertype = 0x0800 if osrc.version == 4 else 0x86DD
    frame = bytes.fromhex(a.dmac.replace(":", "")) + src_mac + struct.pack("!H", ethertype) + outer
    s.send(frame)


if __name__ == "__main__":
    main()
