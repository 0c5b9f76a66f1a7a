#!/usr/bin/env python3
"""Opens N client connections to a MySQL-protocol server, logs each one in
(mysql_native_password, answering an auth switch if asked), prints "ready N" once all are
logged in, then keeps them idle until stdin closes. Standard library only.

    bench/idle_clients.py HOST PORT USER PASSWORD N
"""
import asyncio
import hashlib
import resource
import struct
import sys

CAPS = 0x00000001 | 0x00000200 | 0x00008000 | 0x00080000  # LONG_PASSWORD PROTOCOL_41 SECURE PLUGIN_AUTH


def native(password: bytes, scramble: bytes) -> bytes:
    if not password:
        return b""
    s1 = hashlib.sha1(password).digest()
    s2 = hashlib.sha1(s1).digest()
    s3 = hashlib.sha1(scramble + s2).digest()
    return bytes(a ^ b for a, b in zip(s1, s3))


async def read_packet(reader):
    head = await reader.readexactly(4)
    length = head[0] | head[1] << 8 | head[2] << 16
    return head[3], await reader.readexactly(length)


def packet(seq: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


async def login(host, port, user, password):
    reader, writer = await asyncio.open_connection(host, port)
    seq, greeting = await read_packet(reader)
    if greeting[:1] == b"\xff":
        raise RuntimeError(greeting[3:].decode(errors="replace"))
    pos = greeting.index(b"\0", 1) + 1  # after the version string
    pos += 4  # connection id
    scramble = greeting[pos:pos + 8]
    pos += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10
    scramble += greeting[pos:pos + 12]
    auth = native(password, scramble)
    payload = struct.pack("<IIB", CAPS, 1 << 24, 45) + b"\0" * 23
    payload += user + b"\0" + bytes([len(auth)]) + auth + b"mysql_native_password\0"
    writer.write(packet(seq + 1, payload))
    while True:
        seq, reply = await read_packet(reader)
        if reply[:1] == b"\x00":
            return writer
        if reply[:1] == b"\xfe":  # auth switch: plugin name, then the new scramble
            end = reply.index(b"\0", 1)
            data = reply[end + 1:].rstrip(b"\0")
            writer.write(packet(seq + 1, native(password, data)))
            continue
        raise RuntimeError(reply[3:].decode(errors="replace"))


async def main():
    host, port, user, password, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 100)), hard))
    writers = []
    batch = 200
    for start in range(0, n, batch):
        writers += await asyncio.gather(*(login(host, port, user.encode(), password.encode())
                                          for _ in range(start, min(n, start + batch))))
    print(f"ready {len(writers)}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for w in writers:
        w.close()


asyncio.run(main())
