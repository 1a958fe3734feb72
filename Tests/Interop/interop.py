#!/usr/bin/env python3
"""Interop between LongLink's Swift codec and the official protobuf runtime.

The Swift test (Tests/LongLinkWireTests/InteropTests.swift) first generates the Python classes
with `python3 -m grpc_tools.protoc` into GEN_DIR, then runs:

    interop.py encode GEN_DIR STREAM_OUT JSON_OUT
        Encodes frames of every kind with interesting values as a delimited stream (varint
        length, then the Frame message) and describes them in JSON.
    interop.py decode GEN_DIR STREAM_IN JSON_OUT
        Decodes a delimited stream written by Swift and describes the frames in JSON.

The JSON is a list with one object per frame: {"kind": <body field name or "unrecognized">, ...}
with the body's fields under their proto names. Integers are decimal strings (uint64 does not fit
a JSON double), bytes are lowercase hex, maps are objects, an absent Response.status is null.

Requires: pip install protobuf grpcio-tools
"""

import json
import sys


def load_schema(gen_dir):
    sys.path.insert(0, gen_dir)
    from longlink.v1 import longlink_pb2  # noqa: E402 (generated at test time)

    return longlink_pb2


def encode_varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_delimited(data):
    """Splits a delimited stream into message bodies (our own varint reader, checked strictly)."""
    bodies = []
    pos = 0
    while pos < len(data):
        length = 0
        shift = 0
        while True:
            if pos >= len(data):
                raise ValueError("stream ends inside a length prefix")
            if shift >= 70:
                raise ValueError("length prefix longer than 10 bytes")
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if pos + length > len(data):
            raise ValueError("stream ends inside a frame")
        bodies.append(data[pos : pos + length])
        pos += length
    return bodies


def describe(frame):
    kind = frame.WhichOneof("body")
    if kind is None:
        return {"kind": "unrecognized"}
    m = getattr(frame, kind)
    d = {"kind": kind}
    if kind == "hello":
        d.update(version=str(m.version), client_id=m.client_id, heartbeat_ms=str(m.heartbeat_ms),
                 metadata=dict(m.metadata))
    elif kind == "welcome":
        d.update(version=str(m.version), server_id=m.server_id, heartbeat_ms=str(m.heartbeat_ms),
                 max_frame_bytes=str(m.max_frame_bytes), load_permille=str(m.load_permille),
                 dedupe_window_ms=str(m.dedupe_window_ms))
    elif kind == "request":
        d.update(request_id=m.request_id, method=m.method, payload=m.payload.hex(),
                 timeout_ms=str(m.timeout_ms), metadata=dict(m.metadata))
    elif kind == "response":
        status = None
        if m.HasField("status"):
            status = {"code": str(m.status.code), "message": m.status.message}
        d.update(request_id=m.request_id, payload=m.payload.hex(), status=status)
    elif kind == "cancel":
        d.update(request_id=m.request_id)
    elif kind == "push":
        d.update(seq=str(m.seq), topic=m.topic, payload=m.payload.hex())
    elif kind == "ack":
        d.update(seqs=[str(s) for s in m.seqs], epoch=str(m.epoch))
    elif kind == "sync":
        pass
    elif kind == "ping":
        d.update(nonce=str(m.nonce))
    elif kind == "pong":
        d.update(nonce=str(m.nonce), load_permille=str(m.load_permille))
    elif kind == "go_away":
        d.update(code=str(m.code), reason=m.reason, reconnect=m.reconnect, retry_after_ms=str(m.retry_after_ms))
    else:
        raise ValueError("unexpected body " + kind)
    return d


def sample_frames(pb):
    """Frames of every kind with values that stress a codec."""
    U32 = 2**32 - 1
    U64 = 2**64 - 1
    frames = []

    def add(**body):
        frames.append(pb.Frame(**body))

    add(hello=pb.Hello(version=1, client_id="client-ü-😀", heartbeat_ms=15000,
                       metadata={"app": "quotes", "ключ": "значение", "": "empty key", "empty value": "",
                                 "emoji 😀": "價格 \u0000 nul"}))
    add(hello=pb.Hello())
    add(welcome=pb.Welcome(version=1, server_id="srv-1", heartbeat_ms=30000, max_frame_bytes=U32,
                           load_permille=1000, dedupe_window_ms=60000))
    add(request=pb.Request(request_id="18446744073709551615", method="room.enter", payload=bytes(range(256)),
                           timeout_ms=U32, metadata={"trace": "abc", "long": "x" * 5000}))
    add(request=pb.Request())
    ok = pb.Response(request_id="r-ok")
    ok.status.SetInParent()  # present, but every field default: Status{} on the wire
    frames.append(pb.Frame(response=ok))
    add(response=pb.Response(request_id="r-err", payload=b"\x00\xff",
                             status=pb.Status(code=16, message="token expired — log in again")))
    add(response=pb.Response(request_id="r-plain", payload=b"reply"))
    add(cancel=pb.Cancel(request_id="42"))
    add(push=pb.Push(seq=U64, topic="alerts/價格", payload=bytes((i * 31 + 7) % 256 for i in range(65536))))
    add(push=pb.Push(seq=0, topic="ticks"))
    add(ack=pb.Ack(seqs=[1, 2, 127, 128, 300, 2**32, 2**63, U64]))
    add(ack=pb.Ack(seqs=list(range(1, 3001))))
    add(ack=pb.Ack())
    add(ack=pb.Ack(seqs=[5], epoch=U64))
    add(sync=pb.Sync())
    add(ping=pb.Ping(nonce=0))
    add(ping=pb.Ping(nonce=U64))
    add(pong=pb.Pong(nonce=42, load_permille=999))
    add(go_away=pb.GoAway(code=14, reason="draining", reconnect=True, retry_after_ms=2500))
    add(go_away=pb.GoAway())
    frames.append(pb.Frame())  # no body: length 0 on the wire
    return frames


def main(argv):
    if len(argv) != 5 or argv[1] not in ("encode", "decode"):
        sys.stderr.write(__doc__)
        return 2
    mode, gen_dir, stream_path, json_path = argv[1:]
    pb = load_schema(gen_dir)
    if mode == "encode":
        frames = sample_frames(pb)
        with open(stream_path, "wb") as f:
            for frame in frames:
                body = frame.SerializeToString()
                f.write(encode_varint(len(body)))
                f.write(body)
    else:
        with open(stream_path, "rb") as f:
            data = f.read()
        frames = []
        for body in read_delimited(data):
            frame = pb.Frame()
            frame.ParseFromString(body)
            frames.append(frame)
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump([describe(frame) for frame in frames], f, ensure_ascii=True, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
