#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (corpus/<target>/): well-formed inputs that reach
past the first checks, and a few classic malformed ones. Run from this folder after changing a
wire format; the files are committed."""
import os
import struct

HELLO_MAGIC = 0x4C485242
UNIQUE_ID_MAGIC = 0x31445242


def write(target, name, data):
    os.makedirs(os.path.join("corpus", target), exist_ok=True)
    with open(os.path.join("corpus", target, name), "wb") as f:
        f.write(data)


def sockaddr_in(port, ip=(127, 0, 0, 1)):
    return struct.pack("<H", 2) + struct.pack(">H", port) + bytes(ip) + bytes(8)


def sockaddr_in6(port):
    return struct.pack("<H", 10) + struct.pack(">H", port) + bytes(4) + bytes(15) + b"\x01" + bytes(4)


def unique_id(addr, flags=0, secret=bytes(range(16)), nonce=42):
    fields = struct.pack("<II", UNIQUE_ID_MAGIC, flags) + addr.ljust(28, b"\0")
    fields += struct.pack("<I", len(addr)) + secret + struct.pack("<Q", nonce)
    return fields.ljust(128, b"\0")


# unique_id_fuzz: 128 id bytes, then "NCCL_COMM_ID\nBRAID_COMM_SECRET".
write("unique_id_fuzz", "v4", unique_id(sockaddr_in(29500)))
write("unique_id_fuzz", "v6", unique_id(sockaddr_in6(29500), flags=1))
write("unique_id_fuzz", "port0", unique_id(sockaddr_in(0)))
write("unique_id_fuzz", "env_v4", unique_id(sockaddr_in(1)) + b"127.0.0.1:29500\n" + b"0123456789abcdef" * 2)
write("unique_id_fuzz", "env_v6", bytes(128) + b"[::1]:29500\n" + b"FEDCBA9876543210" * 2)
write("unique_id_fuzz", "env_bad_secret", bytes(128) + b"10.0.0.1:1\n" + b"+f" * 16)
write("unique_id_fuzz", "env_port0", bytes(128) + b"10.0.0.1:0")

# bootstrap_wire_fuzz: mode byte (0 hello, 1 frames, 2 ring entries, 3 ring assignment, 4 ring
# hello), then the reader's input.
# A connection opens with AuthHello (magic, version 3, a 16-byte nonce), then, once the root has
# answered, sends RootHello (magic, version, a 32-byte proof, the id's nonce, nranks, rank, and
# the sockaddr of its ring port in 28 bytes).
BOOTSTRAP_VERSION = 3
RING_MAGIC = 0x47525242


def ring_addr(addr):
    return struct.pack("<II", len(addr), 0) + addr.ljust(28, b"\0") + bytes(4)


def hello(nranks, rank, addr):
    opening = struct.pack("<II", HELLO_MAGIC, BOOTSTRAP_VERSION) + bytes(range(100, 116))
    h = struct.pack("<II", HELLO_MAGIC, BOOTSTRAP_VERSION) + bytes(range(1, 33))
    h += struct.pack("<Q", 0x1122334455667788)
    return opening + h + struct.pack("<ii", nranks, rank) + ring_addr(addr)


write("bootstrap_wire_fuzz", "hello_fixed", b"\x00\x01" + hello(4, 2, sockaddr_in(40000)))
write("bootstrap_wire_fuzz", "hello_slow", b"\x00\x00" + hello(2, 1, sockaddr_in6(40001)))
write("bootstrap_wire_fuzz", "hello_alone", b"\x00\x03" + hello(1, 0, b""))
write("bootstrap_wire_fuzz", "hello_port0", b"\x00\x01" + hello(3, 0, sockaddr_in(0)))
frames = struct.pack("<II", 1, 5) + b"hello" + struct.pack("<II", 1, 0) + struct.pack("<II", 3, 0)
write("bootstrap_wire_fuzz", "frames", b"\x01" + frames)
write("bootstrap_wire_fuzz", "frame_huge", b"\x01" + struct.pack("<II", 1, 0xFFFFFFF0))
write("bootstrap_wire_fuzz", "frame_kind", b"\x01" + struct.pack("<II", 2, 1) + b"e")
entries = b"".join(struct.pack("<I", len(e)) + e for e in [b"a", b"", b"ccc"])
write("bootstrap_wire_fuzz", "ring_entries", b"\x02" + entries + b"\x05\0\0")
write("bootstrap_wire_fuzz", "ring_entry_huge", b"\x02" + struct.pack("<I", 0xFFFFFFFF) + b"x")
# RingAssignment: next's sockaddr (28 bytes), its length, the token for next, the token from prev.
def assignment(addr):
    return addr.ljust(28, b"\0") + struct.pack("<I", len(addr)) + bytes(range(16)) + bytes(range(16, 32))


write("bootstrap_wire_fuzz", "assignment_v4", b"\x03\x02" + assignment(sockaddr_in(40000)))
write("bootstrap_wire_fuzz", "assignment_v6", b"\x03\x03" + assignment(sockaddr_in6(40001)))
write("bootstrap_wire_fuzz", "assignment_alone", b"\x03\x00" + assignment(b""))
# RingHello: magic, version, the sender's rank, pad, its token.
ring_hello = struct.pack("<IIiI", RING_MAGIC, BOOTSTRAP_VERSION, 3, 0) + bytes([9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6])
write("bootstrap_wire_fuzz", "ring_hello", b"\x04\x00" + ring_hello + b"trailing")
write("bootstrap_wire_fuzz", "ring_hello_fixed", b"\x04\x05" + bytes(32))

# tcp_frames_fuzz: the byte stream from a peer: {slot descriptor, payload}... The descriptor is
# transports/fifo.h's SlotInfo, payload length first: 8 bytes, or 32 with the operation's
# fingerprint; seeds for both.
for header in (8, 32):
    def wire(payload, tag):
        return (struct.pack("<II", len(payload), tag) + bytes(header - 8)) + payload

    write("tcp_frames_fuzz", f"three_{header}", wire(b"a" * 64, 7) + wire(b"", 8) + wire(b"xyz", 9))
    write("tcp_frames_fuzz", f"too_big_{header}", wire(b"b" * 10, 1) + wire(b"c" * 65, 2))
    write("tcp_frames_fuzz", f"truncated_{header}", wire(b"d" * 20, 3)[:-5])
    write("tcp_frames_fuzz", f"many_{header}", b"".join(wire(bytes([i]) * (i % 65), i) for i in range(40)))

# A sender's status (tag 0xfffffffe, 24 bytes after the header) between two slots: consumed by
# the proxy, never delivered as a slot.
status = struct.pack("<II", 24, 0xFFFFFFFE) + bytes(range(24)) + bytes(range(24))
write("tcp_frames_fuzz", "status_between", struct.pack("<II", 3, 7) + bytes(24) + b"abc" + status + struct.pack("<II", 1, 9) + bytes(24) + b"z")
