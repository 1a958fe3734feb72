#!/usr/bin/env python3
"""Checks the wire examples of Docs.docc/Protocol.md against the schema.

Compiles proto/longlink/v1/longlink.proto with grpc_tools.protoc, encodes each
example frame with the official protobuf runtime (length-delimited), and fails
if the exact hex bytes are missing from the article. It also checks the
schema's field numbers and a few decoding rules the article states.

Usage: python3 Scripts/check-protocol-examples.py   (needs protobuf, grpcio-tools)
"""

import os
import re
import sys
import zlib

from longlink_schema import ROOT, compiled_schema, report, varint
ARTICLE = os.path.join(ROOT, "Docs.docc", "Protocol.md")




def hexed(data):
    return " ".join(f"{b:02x}" for b in data)


def delimited(message):
    body = message.SerializeToString(deterministic=True)
    return varint(len(body)) + body


def main():
    failures = []

    with compiled_schema() as pb:

        # The frame kinds and their field numbers are fixed by the product brief.
        expected_fields = {
            "hello": 1, "welcome": 2, "request": 3, "response": 4, "cancel": 5, "push": 6,
            "ack": 7, "sync": 8, "ping": 9, "pong": 10, "go_away": 11,
        }
        actual_fields = {f.name: f.number for f in pb.Frame.DESCRIPTOR.fields}
        if actual_fields != expected_fields:
            failures.append(f"Frame fields differ: {actual_fields}")

        examples = [
            pb.Frame(hello=pb.Hello(version=1, client_id="c1")),
            pb.Frame(hello=pb.Hello(version=1, client_id="c1", heartbeat_ms=15000)),
            pb.Frame(welcome=pb.Welcome(version=1, server_id="s1", heartbeat_ms=15000, dedupe_window_ms=60000)),
            pb.Frame(request=pb.Request(request_id="42", method="room.enter", payload=b'{"id":7}', timeout_ms=5000)),
            pb.Frame(request=pb.Request(request_id="42", method="room.enter", resent=True)),
            pb.Frame(response=pb.Response(request_id="42", payload=b'{"ok":true}')),
            pb.Frame(response=pb.Response(request_id="43", status=pb.Status(code=4))),
            pb.Frame(cancel=pb.Cancel(request_id="43")),
            pb.Frame(push=pb.Push(seq=5, topic="alerts", payload=b"hi")),
            pb.Frame(push=pb.Push(seq=5, topic="alerts", payload=b"hi", epoch=7)),
            pb.Frame(ack=pb.Ack(seqs=[5, 6, 300])),
            pb.Frame(ack=pb.Ack(seqs=[5, 6, 300], epoch=7)),
            pb.Frame(sync=pb.Sync()),
            pb.Frame(ping=pb.Ping(nonce=1)),
            pb.Frame(pong=pb.Pong(nonce=1, load_permille=250)),
            # A live heartbeat change.
            pb.Frame(ping=pb.Ping(nonce=1, heartbeat_ms=120000)),
            pb.Frame(pong=pb.Pong(nonce=1, load_permille=250, heartbeat_ms=120000)),
            pb.Frame(go_away=pb.GoAway(code=14, reason="drain", reconnect=True, retry_after_ms=1000)),
            pb.Frame(),
            # The compression extension.
            pb.Frame(hello=pb.Hello(version=1, client_id="c1", metadata={"longlink-compression": "zlib"})),
            pb.Frame(welcome=pb.Welcome(version=1, server_id="s1", metadata={"longlink-compression": "zlib"})),
            pb.Frame(response=pb.Response(request_id="42", payload=zlib.compress(b'{"ok":true}'), compression=1)),
        ]

        with open(ARTICLE, encoding="utf-8") as f:
            article = f.read()
        # Compare on lines of hex only, so that "00" cannot match inside another example.
        hex_runs = set()
        for line in article.splitlines():
            for cell in re.findall(r"`([0-9a-f]{2}(?: [0-9a-f]{2})*)`", line):
                hex_runs.add(cell)
            stripped = line.strip()
            if re.fullmatch(r"[0-9a-f]{2}(?: [0-9a-f]{2})*", stripped):
                hex_runs.add(stripped)

        for frame in examples:
            wire = hexed(delimited(frame))
            if wire not in hex_runs:
                failures.append(f"missing from Protocol.md: {wire}  ({frame.WhichOneof('body') or 'empty'})")

        # Varint examples quoted in the framing rules.
        for value, text in [(5, "05"), (127, "7f"), (128, "80 01"), (300, "ac 02"), (4194304, "80 80 80 02")]:
            if hexed(varint(value)) != text or f"`{text}`" not in article:
                failures.append(f"varint example {value} = {text} is wrong or missing")

        # Decoding rules the article states.
        ack = pb.Ack()
        ack.ParseFromString(bytes.fromhex("0805080608ac02"))  # unpacked
        if list(ack.seqs) != [5, 6, 300]:
            failures.append("unpacked Ack.seqs did not decode")
        two = pb.Frame()
        two.ParseFromString(bytes.fromhex("4a020801" "4200"))  # ping body, then sync body
        if two.WhichOneof("body") != "sync":
            failures.append("last oneof body should win")
        unknown = pb.Frame()
        unknown.ParseFromString(bytes.fromhex("6001"))  # field 12, varint: a future frame kind
        if unknown.WhichOneof("body") is not None:
            failures.append("unknown frame kind should decode with no body")

    return report("check-protocol-examples", failures, f"{len(examples)} frames match the schema and Protocol.md")


if __name__ == "__main__":
    sys.exit(main())
