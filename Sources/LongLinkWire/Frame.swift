/// One frame of wire protocol v1: the `Frame` message of `longlink.proto`.
///
/// On the wire each frame is a protobuf `Frame` message preceded by its length as a base-128
/// varint (the "delimited" encoding). Exactly one body is set; a frame whose body is absent or of a
/// kind this version does not know decodes as ``unrecognized`` and is ignored by receivers, so that
/// new frame kinds can be added without breaking old peers.
public enum Frame: Sendable, Hashable {
    /// Client to server, the first frame on every connection (field 1).
    case hello(Hello)
    /// Server to client, the answer to `Hello` (field 2).
    case welcome(Welcome)
    /// Client to server: a call (field 3).
    case request(Request)
    /// Server to client: the reply to the request with the same `requestID` (field 4).
    case response(Response)
    /// Client to server: the caller gave up on a request (field 5).
    case cancel(Cancel)
    /// Server to client: a pushed message (field 6).
    case push(Push)
    /// Client to server: the sequence numbers of reliable pushes received (field 7).
    case ack(Ack)
    /// Client to server: "logged in: send what I missed" (field 8).
    case sync(Sync)
    /// Either way: a liveness probe (field 9).
    case ping(Ping)
    /// Either way: the answer to `Ping` with the same nonce (field 10).
    case pong(Pong)
    /// Either way, before closing (field 11).
    case goAway(GoAway)
    /// A frame with no body, or with a body kind this version does not know. Receivers ignore it.
    case unrecognized
}

extension Frame {
    /// The protocol version this library speaks.
    public static let protocolVersion: UInt32 = 1

    /// The default maximum size of one frame (its body, without the length prefix): 4 MiB.
    public static let defaultMaxFrameBytes = 4 * 1024 * 1024

    /// The most seqs one `Ack` carries: a client sends no more in one frame, and a server accepts
    /// at least this many.
    public static let maxAckSeqs = 16_384

    /// `Hello { uint32 version = 1; string client_id = 2; uint32 heartbeat_ms = 3; map<string,string> metadata = 4; }`
    public struct Hello: Sendable, Hashable {
        /// The protocol version the client speaks (1).
        public var version: UInt32
        /// The client's stable identity; the server de-duplicates requests per (client_id, request_id).
        public var clientID: String
        /// The heartbeat interval the client proposes, in milliseconds (0 = no preference).
        public var heartbeatMilliseconds: UInt32
        /// Free-form metadata (app version, platform). Never credentials: log in with a request.
        public var metadata: [String: String]

        /// Creates a `Hello`.
        public init(
            version: UInt32 = Frame.protocolVersion, clientID: String = "", heartbeatMilliseconds: UInt32 = 0,
            metadata: [String: String] = [:]
        ) {
            self.version = version
            self.clientID = clientID
            self.heartbeatMilliseconds = heartbeatMilliseconds
            self.metadata = metadata
        }
    }

    /// `Welcome { uint32 version = 1; string server_id = 2; uint32 heartbeat_ms = 3; uint32 max_frame_bytes = 4; uint32 load_permille = 5; uint32 dedupe_window_ms = 6; uint32 max_in_flight = 7; map<string,string> metadata = 8; }`
    public struct Welcome: Sendable, Hashable {
        /// The protocol version the server speaks for this connection.
        public var version: UInt32
        /// The server's identity (for logs and statistics).
        public var serverID: String
        /// The heartbeat interval both sides use, in milliseconds.
        public var heartbeatMilliseconds: UInt32
        /// The largest frame body the server accepts, in bytes (0 = the default, 4 MiB).
        public var maxFrameBytes: UInt32
        /// The server's load, 0 (idle) to 1000 (full), for client-side load balancing.
        public var loadPermille: UInt32
        /// How long the server remembers (client_id, request_id) for de-duplication; 0 = no de-duplication.
        public var dedupeWindowMilliseconds: UInt32
        /// The most requests the server runs at once for this connection; 0 = not said.
        public var maxInFlight: UInt32
        /// Free-form metadata (field 8): the extensions the server accepts, such as
        /// `longlink-compression: zlib`.
        public var metadata: [String: String] = [:]

        /// Creates a `Welcome`.
        public init(
            version: UInt32 = Frame.protocolVersion, serverID: String = "", heartbeatMilliseconds: UInt32 = 0,
            maxFrameBytes: UInt32 = 0, loadPermille: UInt32 = 0, dedupeWindowMilliseconds: UInt32 = 0,
            maxInFlight: UInt32 = 0
        ) {
            self.version = version
            self.serverID = serverID
            self.heartbeatMilliseconds = heartbeatMilliseconds
            self.maxFrameBytes = maxFrameBytes
            self.loadPermille = loadPermille
            self.dedupeWindowMilliseconds = dedupeWindowMilliseconds
            self.maxInFlight = maxInFlight
        }
    }

    /// `Request { string request_id = 1; string method = 2; bytes payload = 3; uint32 timeout_ms = 4; map<string,string> metadata = 5; uint32 compression = 6; bool resent = 7; }`
    public struct Request: Sendable, Hashable {
        /// Unique per client_id for the life of the client; the reply carries the same id.
        public var requestID: String
        /// The method name the server routes on.
        public var method: String
        /// The encoded request message.
        public var payload: [UInt8]
        /// The caller's remaining budget in milliseconds (0 = none given).
        public var timeoutMilliseconds: UInt32
        /// Per-request metadata.
        public var metadata: [String: String]
        /// How `payload` is compressed (field 6): 0 not at all, 1 zlib. Only after both sides
        /// advertised it (see the protocol's compression extension).
        public var compression: UInt32 = 0
        /// True on a copy of a request already written on an earlier connection (field 7), so that a
        /// fleet may answer it `UNKNOWN` rather than run it when its de-dup entry may have been lost.
        /// Never set on a first write.
        public var resent: Bool = false

        /// Creates a `Request`.
        public init(
            requestID: String = "", method: String = "", payload: [UInt8] = [], timeoutMilliseconds: UInt32 = 0,
            metadata: [String: String] = [:]
        ) {
            self.requestID = requestID
            self.method = method
            self.payload = payload
            self.timeoutMilliseconds = timeoutMilliseconds
            self.metadata = metadata
        }
    }

    /// `Status { uint32 code = 1; string message = 2; }`, gRPC status code numbers.
    public struct Status: Sendable, Hashable {
        /// The status code; `.ok` when the field is absent.
        public var code: StatusCode
        /// A human-readable explanation.
        public var message: String
        /// What the server knows beyond ``code`` (field 3): 0 nothing, or ``outcomeUnknownDetail``.
        public var detail: UInt32 = 0

        /// `detail` 1, with code `UNKNOWN`: the fleet server running the request stopped before it
        /// answered; the request may or may not have taken effect, and it is not run again.
        public static let outcomeUnknownDetail: UInt32 = 1

        /// Creates a status.
        public init(code: StatusCode = .ok, message: String = "") {
            self.code = code
            self.message = message
        }
    }

    /// `Response { string request_id = 1; bytes payload = 2; Status status = 3; uint32 compression = 4; }`
    public struct Response: Sendable, Hashable {
        /// The id of the request this answers.
        public var requestID: String
        /// The encoded reply message (empty on error).
        public var payload: [UInt8]
        /// The outcome; `nil` (absent on the wire) means OK.
        public var status: Status?
        /// How `payload` is compressed (field 4): 0 not at all, 1 zlib.
        public var compression: UInt32 = 0

        /// Creates a `Response`.
        public init(requestID: String = "", payload: [UInt8] = [], status: Status? = nil) {
            self.requestID = requestID
            self.payload = payload
            self.status = status
        }
    }

    /// `Cancel { string request_id = 1; }`
    public struct Cancel: Sendable, Hashable {
        /// The id of the request the caller gave up on.
        public var requestID: String

        /// Creates a `Cancel`.
        public init(requestID: String = "") {
            self.requestID = requestID
        }
    }

    /// `Push { uint64 seq = 1; string topic = 2; bytes payload = 3; uint64 epoch = 4; uint32 compression = 5; }`
    public struct Push: Sendable, Hashable {
        /// The per-principal sequence number of a reliable push; 0 for a best-effort push (never acked).
        public var seq: UInt64
        /// The topic the push belongs to.
        public var topic: String
        /// The encoded message.
        public var payload: [UInt8]
        /// Which seq space `seq` belongs to: the server changes it whenever a principal's numbering
        /// starts again (a store that restarted, another store, another principal). 0 = not said.
        public var epoch: UInt64
        /// How `payload` is compressed (field 5): 0 not at all, 1 zlib.
        public var compression: UInt32 = 0

        /// Creates a `Push`.
        public init(seq: UInt64 = 0, topic: String = "", payload: [UInt8] = [], epoch: UInt64 = 0) {
            self.seq = seq
            self.topic = topic
            self.payload = payload
            self.epoch = epoch
        }
    }

    /// `Ack { repeated uint64 seqs = 1; uint64 epoch = 2; }`, seqs written packed; decoders accept
    /// packed and unpacked.
    public struct Ack: Sendable, Hashable {
        /// The sequence numbers of reliable pushes the client received.
        public var seqs: [UInt64]
        /// The seq space of every seq in this `Ack` (the `Push.epoch` of the pushes it acknowledges):
        /// a server ignores an `Ack` of another epoch than the one it sends in. 0 = not said (an
        /// older peer): the server applies it to its current epoch.
        public var epoch: UInt64 = 0

        /// Creates an `Ack`.
        public init(seqs: [UInt64] = []) {
            self.seqs = seqs
        }

        /// Creates an `Ack` of pushes numbered in `epoch`.
        public init(seqs: [UInt64], epoch: UInt64) {
            self.seqs = seqs
            self.epoch = epoch
        }
    }

    /// `Sync { }`: the client is logged in; the server sends every unacknowledged reliable push.
    public struct Sync: Sendable, Hashable {
        /// Creates a `Sync`.
        public init() {}
    }

    /// `Ping { uint64 nonce = 1; uint32 heartbeat_ms = 2; }`
    public struct Ping: Sendable, Hashable {
        /// An opaque value the `Pong` echoes.
        public var nonce: UInt64
        /// Client to server only: a new heartbeat interval proposed for the live link, in
        /// milliseconds (0 = no proposal).
        public var heartbeatMilliseconds: UInt32

        /// Creates a `Ping`.
        public init(nonce: UInt64 = 0) {
            self.init(nonce: nonce, heartbeatMilliseconds: 0)
        }

        /// Creates a `Ping` that proposes a heartbeat interval.
        public init(nonce: UInt64, heartbeatMilliseconds: UInt32) {
            self.nonce = nonce
            self.heartbeatMilliseconds = heartbeatMilliseconds
        }
    }

    /// `Pong { uint64 nonce = 1; uint32 load_permille = 2; uint32 heartbeat_ms = 3; }`
    public struct Pong: Sendable, Hashable {
        /// The nonce of the `Ping` this answers.
        public var nonce: UInt64
        /// The sender's load, 0 to 1000 (servers fill it in; clients send 0).
        public var loadPermille: UInt32
        /// Server to client only, answering a `Ping` that proposed an interval: the interval the
        /// server enforces from now on, in milliseconds (0 = unchanged, the proposal not taken).
        public var heartbeatMilliseconds: UInt32

        /// Creates a `Pong`.
        public init(nonce: UInt64 = 0, loadPermille: UInt32 = 0) {
            self.init(nonce: nonce, loadPermille: loadPermille, heartbeatMilliseconds: 0)
        }

        /// Creates a `Pong` that answers a proposed heartbeat interval.
        public init(nonce: UInt64, loadPermille: UInt32, heartbeatMilliseconds: UInt32) {
            self.nonce = nonce
            self.loadPermille = loadPermille
            self.heartbeatMilliseconds = heartbeatMilliseconds
        }
    }

    /// `GoAway { uint32 code = 1; string reason = 2; bool reconnect = 3; uint32 retry_after_ms = 4; }`
    public struct GoAway: Sendable, Hashable {
        /// Why the sender is closing, as a status code.
        public var code: StatusCode
        /// A human-readable reason.
        public var reason: String
        /// Whether the client should reconnect (to this or another server).
        public var reconnect: Bool
        /// How long to wait before reconnecting, in milliseconds.
        public var retryAfterMilliseconds: UInt32

        /// Creates a `GoAway`.
        public init(
            code: StatusCode = .ok, reason: String = "", reconnect: Bool = false, retryAfterMilliseconds: UInt32 = 0
        ) {
            self.code = code
            self.reason = reason
            self.reconnect = reconnect
            self.retryAfterMilliseconds = retryAfterMilliseconds
        }
    }
}
