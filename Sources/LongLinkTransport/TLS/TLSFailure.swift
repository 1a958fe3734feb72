import LongLinkCore

/// Why a TLS connection failed: the ``LongLinkCore/LongLinkError/underlying`` cause of every
/// ``LongLinkCore/LongLinkError/Code-swift.struct/tlsFailure`` error, for an app to switch on.
///
/// ```swift
/// if error.code == .tlsFailure, let tls = error.underlying as? TLSFailure, tls.reason == .pinMismatch { … }
/// ```
public struct TLSFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Hashable {
        /// The peer's certificate has expired.
        case certificateExpired
        /// The peer's certificate is not valid yet (or the local clock is wrong).
        case certificateNotYetValid
        /// The server's certificate does not name the host connected to.
        case hostnameMismatch
        /// The peer's chain does not lead to a trusted root (an unknown or self-signed issuer).
        case untrustedCertificate
        /// The peer's certificate failed another check (revoked, malformed, wrong purpose).
        case invalidCertificate
        /// The chain verified, but none of its keys is one of the pinned keys (without
        /// verification: the leaf's key is not). The detail names the pins and the keys seen.
        case pinMismatch
        /// The handshake did not finish within its time (a client's connect timeout, a server's
        /// handshake timeout): the peer stalled or is not a TLS peer that answers.
        case handshakeTimeout
        /// The peer answered with something that is not TLS: it speaks plain TCP.
        case plaintextPeer
        /// The peer ended the handshake with an alert: for example, it refused this side's
        /// certificate, or has none it was asked for.
        case rejectedByPeer
        /// A server requires a client certificate and the client sent none.
        case certificateRequired
        /// No protocol version (or ALPN protocol) both sides accept.
        case protocolMismatch
        /// The peer closed the connection during the handshake.
        case closedDuringHandshake
        /// Another handshake or record error.
        case handshakeFailed
        /// The peer closed the TCP connection without TLS `close_notify` in the middle of a
        /// message (or of a TLS record): what arrived is cut short, and an attacker can cause this
        /// by injecting a FIN.
        case truncated
        /// TLS is not available on this platform (Apple platforms, for now).
        case unavailable
    }

    /// What went wrong.
    public let reason: Reason
    /// OpenSSL's explanation, when it gave one.
    public let detail: String

    /// Creates a failure.
    public init(reason: Reason, detail: String) {
        self.reason = reason
        self.detail = detail
    }

    /// `reason: detail`.
    public var description: String {
        detail.isEmpty ? "\(reason)" : "\(reason): \(detail)"
    }
}

extension LongLinkError {
    /// A ``LongLinkCore/LongLinkError/Code-swift.struct/tlsFailure`` error with its typed cause.
    static func tls(
        _ reason: TLSFailure.Reason, _ message: String, detail: String = "", file: String = #fileID, line: Int = #line
    ) -> LongLinkError {
        LongLinkError(
            code: .tlsFailure, message: message, underlying: TLSFailure(reason: reason, detail: detail), file: file,
            line: line)
    }
}
