#!/usr/bin/env python3
"""Checks that `longlink inspect` writes the canonical proto3 JSON of every frame.

Compiles proto/longlink/v1/longlink.proto with grpc_tools.protoc into a temporary directory,
encodes frames of every kind, with every field of every message set somewhere, as a delimited
stream (plus raw frames with unknown fields, which a v1 reader skips), runs the built `longlink
inspect` on that file, and then for every output line:

  - the line is one JSON object with exactly the keys offset, size, frame and notes;
  - offset and size are where the frame starts in the stream and how many bytes it takes there;
  - json_format.Parse(frame) into Frame (unknown keys rejected) equals the message encoded.

Exits 1 on any mismatch. The tool is found with `swift build --show-bin-path` unless given as
the first argument or in LONGLINK_TOOL.

Usage: python3 Scripts/check-inspect-json.py [PATH/TO/longlink]   (needs protobuf, grpcio-tools)
"""

import json
import os
import subprocess
import sys
import tempfile

from longlink_schema import ROOT, compiled_schema, report, varint
U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1
# Quotes, backslashes, control characters, a DEL, a line separator, non-BMP text.
AWKWARD = 'q"b\\s/\n\t\r\b\f\x01\x1f\x7f\u2028é😀'




def find_tool():
    if len(sys.argv) > 1:
        return sys.argv[1]
    if os.environ.get("LONGLINK_TOOL"):
        return os.environ["LONGLINK_TOOL"]
    bin_path = subprocess.run(
        ["swift", "build", "--show-bin-path"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    return os.path.join(bin_path, "longlink")


def frames(pb):
    """(body bytes, the Frame a v1 reader sees) pairs: every kind, every field, edge values."""
    messages = [
        pb.Frame(hello=pb.Hello(version=1, client_id="c-1", heartbeat_ms=15000, metadata={"app": "1.0", "k": AWKWARD})),
        pb.Frame(hello=pb.Hello()),
        pb.Frame(
            welcome=pb.Welcome(
                version=1, server_id="s-1", heartbeat_ms=U32_MAX, max_frame_bytes=4194304, load_permille=999,
                dedupe_window_ms=120000,
            )
        ),
        pb.Frame(welcome=pb.Welcome(version=1)),
        pb.Frame(welcome=pb.Welcome(version=1, dedupe_window_ms=60000, max_in_flight=1024)),
        pb.Frame(welcome=pb.Welcome(version=1, metadata={"longlink-compression": "zlib", "k": AWKWARD})),
        pb.Frame(
            request=pb.Request(
                request_id="42", method="room.enter", payload=b'{"id":7}', timeout_ms=5000,
                metadata={"trace": "abc", AWKWARD: ""},
            )
        ),
        pb.Frame(request=pb.Request(request_id="43", method="bin", payload=bytes(range(256)))),
        pb.Frame(request=pb.Request(request_id="45", method="zipped", payload=b"\x78\x01", compression=1)),
        # A copy of a request written again after a reconnection.
        pb.Frame(request=pb.Request(request_id="47", method="room.enter", resent=True)),
        pb.Frame(response=pb.Response(request_id="42", payload=b'{"ok":true}')),
        pb.Frame(response=pb.Response(request_id="45", payload=b"\x78\x01", compression=1)),
        pb.Frame(response=pb.Response(request_id="43", status=pb.Status(code=5, message="not found: " + AWKWARD))),
        # UNKNOWN with the detail OUTCOME_UNKNOWN: a fleet server running the request stopped.
        pb.Frame(response=pb.Response(request_id="46", status=pb.Status(code=2, message="stopped", detail=1))),
        # A present but empty status (OK) is part of the message.
        pb.Frame(response=pb.Response(request_id="44", status=pb.Status())),
        pb.Frame(response=pb.Response()),
        pb.Frame(cancel=pb.Cancel(request_id="43")),
        pb.Frame(push=pb.Push(seq=U64_MAX, topic="alerts", payload=b"\x00\xff\xfe")),
        pb.Frame(push=pb.Push(seq=0, topic="quotes", payload=b'{"p":1}')),
        pb.Frame(push=pb.Push(seq=7, topic="alerts", payload=b"hi", epoch=U64_MAX)),
        pb.Frame(push=pb.Push(seq=8, topic="charts", payload=b"\x78\x01", compression=U32_MAX)),
        pb.Frame(ack=pb.Ack(seqs=[1, 2**53 + 1, 2**63, U64_MAX])),
        pb.Frame(ack=pb.Ack()),
        pb.Frame(ack=pb.Ack(seqs=[3], epoch=U64_MAX)),
        pb.Frame(sync=pb.Sync()),
        pb.Frame(ping=pb.Ping(nonce=U64_MAX)),
        pb.Frame(ping=pb.Ping()),
        pb.Frame(pong=pb.Pong(nonce=7, load_permille=250)),
        pb.Frame(ping=pb.Ping(nonce=9, heartbeat_ms=U32_MAX)),
        pb.Frame(pong=pb.Pong(nonce=9, load_permille=1, heartbeat_ms=120000)),
        pb.Frame(go_away=pb.GoAway(code=14, reason="drain " + AWKWARD, reconnect=True, retry_after_ms=1000)),
        pb.Frame(go_away=pb.GoAway(code=16, reason="kicked")),
        pb.Frame(),
    ]
    pairs = [(m.SerializeToString(deterministic=True), m) for m in messages]
    # Raw bodies: a future frame kind (field 12) reads as no body; unknown fields inside a known
    # message are skipped; the last body on the wire wins.
    pairs.append((bytes.fromhex("6001"), pb.Frame()))
    hello = pb.Hello(version=1, client_id="x").SerializeToString()
    hello_with_unknown = hello + bytes.fromhex("48 05")  # field 9, varint 5
    framed_hello = b"\x0a" + varint(len(hello_with_unknown)) + hello_with_unknown
    pairs.append((framed_hello, pb.Frame(hello=pb.Hello(version=1, client_id="x"))))
    pairs.append((bytes.fromhex("4a020801" "4200"), pb.Frame(sync=pb.Sync())))
    return pairs


def uncovered_fields(pb, messages):
    """Every field of every message type that no message sets to a non-default value."""
    seen = set()

    def visit(message):
        for field, value in message.ListFields():
            seen.add(field.full_name)
            if field.message_type is not None and not field.message_type.GetOptions().map_entry:
                visit(value)

    for message in messages:
        visit(message)
    missing = []
    for name in pb.DESCRIPTOR.message_types_by_name:
        for field in pb.DESCRIPTOR.message_types_by_name[name].fields:
            if field.full_name not in seen:
                missing.append(field.full_name)
    return missing


def main():
    from google.protobuf import json_format

    tool = find_tool()
    failures = []
    with compiled_schema() as pb, tempfile.TemporaryDirectory() as out:

        pairs = frames(pb)
        missing = uncovered_fields(pb, [expected for _, expected in pairs])
        if missing:
            failures.append("the generated frames leave fields unset: " + ", ".join(missing))

        stream = bytearray()
        spans = []
        for body, _ in pairs:
            start = len(stream)
            stream += varint(len(body)) + body
            spans.append((start, len(stream) - start))
        path = os.path.join(out, "frames.bin")
        with open(path, "wb") as f:
            f.write(stream)

        run = subprocess.run([tool, "inspect", path], capture_output=True)
        if run.returncode != 0:
            failures.append(f"longlink inspect exited {run.returncode}: {run.stderr.decode(errors='replace')}")
        # One object per line, lines ended by "\n" only (str.splitlines would also split at U+2028).
        text = run.stdout.decode("utf-8")
        lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
        if len(lines) != len(pairs):
            failures.append(f"{len(lines)} lines for {len(pairs)} frames")

        for index, (line, (_, expected), (offset, size)) in enumerate(zip(lines, pairs, spans)):
            where = f"frame {index} ({expected.WhichOneof('body') or 'empty'})"
            try:
                obj = json.loads(line)
            except ValueError as error:
                failures.append(f"{where}: not JSON ({error}): {line}")
                continue
            if not isinstance(obj, dict) or set(obj) != {"offset", "size", "frame", "notes"}:
                failures.append(f"{where}: keys are not offset, size, frame, notes: {line}")
                continue
            if obj["offset"] != offset or obj["size"] != size:
                failures.append(f"{where}: offset {obj['offset']} size {obj['size']}, expected {offset} and {size}")
            try:
                parsed = json_format.Parse(json.dumps(obj["frame"]), pb.Frame())
            except json_format.ParseError as error:
                failures.append(f"{where}: json_format.Parse rejects {json.dumps(obj['frame'])}: {error}")
                continue
            if parsed != expected:
                failures.append(f"{where}: parsed {parsed} but encoded {expected}")
            # The canonical mapping itself, as the official runtime writes it.
            canonical = json.loads(json_format.MessageToJson(expected))
            if obj["frame"] != canonical:
                failures.append(f"{where}: {json.dumps(obj['frame'])} is not the canonical {json.dumps(canonical)}")

    return report("check-inspect-json", failures, f"{len(pairs)} frames: every line parses into the Frame that was encoded")


if __name__ == "__main__":
    sys.exit(main())
