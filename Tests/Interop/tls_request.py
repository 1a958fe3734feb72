#!/usr/bin/env python3
"""A LongLink request over TLS with Python's ssl module and the official protobuf runtime.

    tls_request.py GEN_DIR HOST PORT CA_FILE SERVER_NAME PAYLOAD

GEN_DIR holds the classes `python3 -m grpc_tools.protoc` generated from proto/longlink/v1. The
script verifies the server against CA_FILE and SERVER_NAME (SNI and host-name check), offers ALPN
longlink/1, sends Hello, reads Welcome, sends Request(method "echo", PAYLOAD), reads the Response
and prints three lines: the negotiated TLS version, the ALPN protocol, and the echoed payload.
Frames are delimited: a varint length, then the Frame message. Exits non-zero on any failure.

Requires: pip install protobuf grpcio-tools
"""

import os
import socket
import ssl
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop import encode_varint  # noqa: E402 (the codec interop script, beside this one)


def read_frame(stream, frame_class):
    length = 0
    shift = 0
    while True:
        byte = stream.read(1)
        if not byte:
            raise EOFError("the server closed the connection")
        length |= (byte[0] & 0x7F) << shift
        shift += 7
        if byte[0] < 0x80:
            break
    body = stream.read(length)
    if len(body) != length:
        raise EOFError("the server closed the connection inside a frame")
    frame = frame_class()
    frame.ParseFromString(body)
    return frame


def main():
    gen_dir, host, port, ca_file, server_name, payload = sys.argv[1:7]
    sys.path.insert(0, gen_dir)
    from longlink.v1 import longlink_pb2 as pb  # noqa: E402 (generated at test time)

    context = ssl.create_default_context(cafile=ca_file)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["longlink/1"])
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=server_name) as tls:
            stream = tls.makefile("rb")

            def send(frame):
                body = frame.SerializeToString()
                tls.sendall(encode_varint(len(body)) + body)

            hello = pb.Frame()
            hello.hello.version = 1
            hello.hello.client_id = "python-tls"
            send(hello)
            welcome = read_frame(stream, pb.Frame)
            if welcome.WhichOneof("body") != "welcome":
                raise RuntimeError("expected Welcome, got %s" % welcome.WhichOneof("body"))
            request = pb.Frame()
            request.request.request_id = "1"
            request.request.method = "echo"
            request.request.payload = payload.encode()
            request.request.timeout_ms = 5000
            send(request)
            while True:
                frame = read_frame(stream, pb.Frame)
                if frame.WhichOneof("body") == "response":
                    break
            response = frame.response
            if response.HasField("status") and response.status.code != 0:
                raise RuntimeError("status %d: %s" % (response.status.code, response.status.message))
            print(tls.version())
            print(tls.selected_alpn_protocol())
            print(response.payload.decode())


if __name__ == "__main__":
    main()
