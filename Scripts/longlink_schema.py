"""What the repository's Python checks share: the schema compiled for the protobuf runtime, and
the varint of the delimited encoding (see Docs.docc/Protocol.md)."""

import contextlib
import importlib
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_ROOT = os.path.join(ROOT, "proto")
PROTO_FILE = os.path.join(PROTO_ROOT, "longlink", "v1", "longlink.proto")


def varint(value):
    """The base-128 varint of a non-negative integer."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


@contextlib.contextmanager
def compiled_schema():
    """Yields the `longlink.v1.longlink_pb2` module, compiled with grpc_tools.protoc into a
    temporary directory that is removed afterwards."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", "-I", PROTO_ROOT, f"--python_out={out}", PROTO_FILE],
            check=True,
        )
        sys.path.insert(0, out)
        try:
            yield importlib.import_module("longlink.v1.longlink_pb2")
        finally:
            sys.path.remove(out)


def report(check, failures, summary):
    """Prints each failure on stderr (or the summary on stdout) under the check's name; the exit status."""
    if failures:
        for failure in failures:
            print(f"{check}: {failure}", file=sys.stderr)
        return 1
    print(f"{check}: {summary}")
    return 0
