internal import LongLinkWire

/// A message the server pushed.
public struct Push: Sendable, Hashable {
    /// The per-principal sequence number of a reliable push; 0 for a best-effort push.
    public var seq: UInt64
    /// The topic.
    public var topic: String
    /// The encoded message.
    public var payload: [UInt8]
    /// The seq space of a reliable push (see `Frame.Push.epoch`): the client de-duplicates and
    /// acknowledges by (epoch, seq).
    var epoch: UInt64 = 0
    /// Set when the payload arrived compressed and could not be inflated (corrupt, or larger than
    /// ``ClientConfiguration/maxFrameBytes`` or ``ClientConfiguration/maxInflationRatio`` times its
    /// size once inflated); ``payload`` is then empty. Typed
    /// streams report it as an undecodable push.
    public internal(set) var payloadError: LongLinkError?

    /// Creates a push.
    public init(seq: UInt64, topic: String, payload: [UInt8]) {
        self.seq = seq
        self.topic = topic
        self.payload = payload
    }

    init(seq: UInt64, topic: String, payload: [UInt8], epoch: UInt64) {
        self.init(seq: seq, topic: topic, payload: payload)
        self.epoch = epoch
    }

    /// The push's identity for de-duplication and acknowledgement.
    var key: PushKey { PushKey(epoch: epoch, seq: seq) }

    // Equality and hashing are the app's view: the epoch is internal.
    public static func == (lhs: Push, rhs: Push) -> Bool {
        lhs.seq == rhs.seq && lhs.topic == rhs.topic && lhs.payload == rhs.payload
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(seq)
        hasher.combine(topic)
        hasher.combine(payload)
    }

    /// Whether the server keeps the push until it is acknowledged (seq > 0).
    public var isReliable: Bool { seq > 0 }

    /// Decodes the payload as `T` with `codec` (JSON by default: a push does not know the client's
    /// configuration). With a client configured with another codec, pass it
    /// (`codec: client.configuration.codec`), or call ``LongLinkClient/decode(_:as:)-(_,Message.Type)``,
    /// which uses ``ClientConfiguration/codec``, as the typed streams do.
    public func decode<T: Decodable>(as type: T.Type, codec: some PayloadCodec = JSONPayloadCodec()) throws -> T {
        try codec.decode(type, from: payload)
    }
}
