# Issue 43's reproductions 1 and 2 against a child `longlink serve` (default configuration), from
# raw sockets speaking protobuf with Python's runtime (pip's protobuf and grpcio-tools, as .ci/run
# installs them). Usage: python3 Scripts/reproduce-tenant-floods.py .build/debug/longlink
import os, random, socket, subprocess, sys, tempfile, time, zlib
from grpc_tools import protoc
_out = tempfile.mkdtemp()
_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto")
assert protoc.main(["protoc", f"-I{_root}", f"--python_out={_out}", os.path.join(_root, "longlink/v1/longlink.proto")]) == 0
sys.path.insert(0, _out)
from longlink.v1 import longlink_pb2 as pb
from google.protobuf.internal.encoder import _VarintBytes
from google.protobuf.internal.decoder import _DecodeVarint32

BIN = sys.argv[1]
def rss(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1]) / 1024
def start():
    p = subprocess.Popen([BIN, "serve", "--port", "0", "--quiet", "--no-feed"], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    return p, int(line.rsplit(":", 1)[1])
class Conn:
    def __init__(self, port, cid, compress=False):
        self.s = socket.create_connection(("127.0.0.1", port)); self.buf = b""
        h = pb.Frame(); h.hello.version = 1; h.hello.client_id = cid
        if compress: h.hello.metadata["longlink-compression"] = "zlib"
        self.send([h]); assert self.read().HasField("welcome")
    def send(self, frames):
        out = b"".join(_VarintBytes(len(b)) + b for b in (f.SerializeToString() for f in frames))
        self.s.sendall(out); return len(out)
    def read(self):
        while True:
            if self.buf:
                try:
                    n, pos = _DecodeVarint32(self.buf, 0)
                    if len(self.buf) >= pos + n:
                        f = pb.Frame(); f.ParseFromString(self.buf[pos:pos+n]); self.buf = self.buf[pos+n:]; return f
                except IndexError: pass
            d = self.s.recv(1 << 20)
            if not d: raise EOFError
            self.buf += d
    def req(self, rid, method, payload=b"", resent=False, comp=0):
        f = pb.Frame(); f.request.request_id = rid; f.request.method = method; f.request.payload = payload
        f.request.resent = resent; f.request.compression = comp; return f
    def call(self, rid, method, payload=b"", **kw):
        self.send([self.req(rid, method, payload, **kw)])
        while True:
            f = self.read()
            if f.HasField("response"): return f.response

def repro1(login=True):
    p, port = start()
    try:
        t0 = time.time(); refused = answered = 0
        for i in range(11):
            c = Conn(port, f"flood-{i}")
            if login: c.call("l", "login", b"mallory")
            c.send([c.req(f"r{j}", "echo", b"x") for j in range(10000)])
            for _ in range(10000):
                f = c.read()
                while not f.HasField("response"): f = c.read()
                if f.response.status.code == 8: refused += 1
                else: answered += 1
            c.s.close()
        dt = time.time() - t0
        v = Conn(port, "victim"); v.call("l", "login", b"victim")
        first = v.call("pay-1", "count", b"{}"); v.s.close()
        v2 = Conn(port, "victim"); v2.call("l2", "login", b"victim")
        again = v2.call("pay-1", "count", b"{}", resent=True)
        asked = v2.call("q-1", "count", b'{"request_id":"pay-1"}')
        print(f"repro 1 ({'one principal' if login else 'anonymous'}): 110,000 echoes from 11 client ids in {dt:.1f} s: {answered} answered, {refused} refused RESOURCE_EXHAUSTED")
        print(f"         victim's count: first {first.payload.decode()}, resent copy {again.payload.decode()} (status {again.status.code}); runs of pay-1 counted by the server: {asked.payload.decode()}")
    finally:
        p.kill(); p.wait()

def repro2():
    p, port = start()
    try:
        plain = bytearray(4_000_000); r = random.Random(1)
        for k in range(0, len(plain), 64): plain[k] = r.randrange(256)
        deflated = zlib.compress(bytes(plain), 9)
        before = rss(p.pid)
        c = Conn(port, "bulk", compress=True); c.call("l", "login", b"bulk")
        sent = 0
        for i in range(100):
            sent += c.send([c.req(f"e{i}", "echo", deflated, comp=1)])
            while True:
                f = c.read()
                if f.HasField("response"): break
            assert f.response.status.code == 0, f.response.status
        during = rss(p.pid); c.s.close(); time.sleep(1)
        after = rss(p.pid)
        print(f"repro 2: 100 echoes of 4,000,000 bytes sent as {len(deflated):,} bytes of zlib each ({sent/2**20:.1f} MiB on the wire): server RSS {before:.1f} -> {during:.1f} MiB, {after:.1f} MiB after the connection closed")
    finally:
        p.kill(); p.wait()

repro1(False); repro1(True); repro2()
