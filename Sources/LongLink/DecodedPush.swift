/// One push of `decodedPushes(topic:as:)`: its message, or why its
/// payload did not decode, with the push itself either way.
///
/// A push that does not decode is an element like any other: the app sees it (to report it, to keep
/// its bytes for later, to decode it with another type), and a reliable one is acknowledged once
/// the sequence has handed the element over, as a decoded one is. Nothing is acknowledged unseen.
///
/// ```swift
/// for try await element in client.decodedPushes(topic: "alerts", as: Alert.self) {
///     switch element {
///     case .message(let alert, _): show(alert)
///     case .undecodable(let push, let error): report(error, seq: push.seq)
///     }
/// }
/// ```
public enum DecodedPush<Message: Sendable>: Sendable {
    /// The push decoded as `Message`.
    case message(Message, Push)
    /// The push's payload did not decode (or could not be decompressed); the error's code is
    /// ``LongLinkError/Code-swift.struct/decodingFailed`` (or
    /// ``LongLinkError/Code-swift.struct/compressionFailed``) and its message names the topic.
    case undecodable(Push, LongLinkError)

    /// The push, decoded or not.
    public var push: Push {
        switch self {
        case .message(_, let push), .undecodable(let push, _): push
        }
    }

    /// The message; throws the decoding error for an undecodable push.
    public func message() throws(LongLinkError) -> Message {
        switch self {
        case .message(let message, _): return message
        case .undecodable(_, let error): throw error
        }
    }
}
