/// The one error type of LongLink: a code to switch on, a message for people, and the
/// underlying cause when there is one.
///
/// Errors the server returned in a `Response` carry the server's status as ``code`` (see
/// ``Code-swift.struct/init(status:)``) and ``isRemote`` set; errors the library detects itself
/// (a deadline, a lost connection, a malformed frame) carry the library's codes.
public struct LongLinkError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value that can grow new cases without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: Hashable, Sendable {
            case status(UInt32)
            case connectionRefused
            case connectTimeout
            case hostUnreachable
            case addressResolutionFailed
            case connectionReset
            case connectionClosed
            case connectionLost
            case protocolViolation
            case frameTooLarge
            case goAway
            case shutdown
            case invalidConfiguration
            case tlsFailure
            case ioFailure
            case decodingFailed
            case compressionFailed
            case outcomeUnknown
        }

        private let wrapped: Wrapped

        private init(_ wrapped: Wrapped) {
            self.wrapped = wrapped
        }

        /// The code for a status a server sent (gRPC numbering).
        public init(status: StatusCode) {
            self.init(.status(status.rawValue))
        }

        /// The caller (or the server) cancelled the call.
        public static let cancelled = Code(status: .cancelled)
        /// An error with no better code.
        public static let unknown = Code(status: .unknown)
        /// The request was malformed.
        public static let invalidArgument = Code(status: .invalidArgument)
        /// The call's deadline passed (before or after the request was written).
        public static let deadlineExceeded = Code(status: .deadlineExceeded)
        /// The thing asked for does not exist.
        public static let notFound = Code(status: .notFound)
        /// The thing to create exists already.
        public static let alreadyExists = Code(status: .alreadyExists)
        /// The caller may not do this.
        public static let permissionDenied = Code(status: .permissionDenied)
        /// A limit was reached: the offline queue is full, too many calls in flight.
        public static let resourceExhausted = Code(status: .resourceExhausted)
        /// The system is not in the state the call needs.
        public static let failedPrecondition = Code(status: .failedPrecondition)
        /// The server has no handler for the method.
        public static let unimplemented = Code(status: .unimplemented)
        /// An invariant broke in the server.
        public static let internalError = Code(status: .internalError)
        /// The service is unavailable for now; retrying may work.
        public static let unavailable = Code(status: .unavailable)
        /// The caller is not (or no longer) authenticated: a terminal error for a client's login.
        public static let unauthenticated = Code(status: .unauthenticated)

        /// The peer refused the connection (nothing listens there).
        public static let connectionRefused = Code(.connectionRefused)
        /// Connecting took longer than the connect timeout.
        public static let connectTimeout = Code(.connectTimeout)
        /// No route to the host or network.
        public static let hostUnreachable = Code(.hostUnreachable)
        /// The host name could not be resolved.
        public static let addressResolutionFailed = Code(.addressResolutionFailed)
        /// The peer reset the connection.
        public static let connectionReset = Code(.connectionReset)
        /// The connection is closed (by either side) and can carry no more data.
        public static let connectionClosed = Code(.connectionClosed)
        /// The connection dropped after the request was written and before its reply came: the
        /// outcome on the server is unknown.
        public static let connectionLost = Code(.connectionLost)
        /// The peer broke the wire protocol (malformed frame, wrong order, unexpected frame).
        public static let protocolViolation = Code(.protocolViolation)
        /// A frame's length prefix exceeds the maximum frame size.
        public static let frameTooLarge = Code(.frameTooLarge)
        /// The server closed the session with `GoAway` and asked the client not to come back.
        public static let goAway = Code(.goAway)
        /// The client or server was shut down.
        public static let shutdown = Code(.shutdown)
        /// A configuration value is invalid.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The TLS handshake or certificate verification failed.
        public static let tlsFailure = Code(.tlsFailure)
        /// Another operating-system I/O error.
        public static let ioFailure = Code(.ioFailure)
        /// A payload did not decode as the type asked for (a reply, or a push); the message names
        /// the method or the topic. The link is not affected.
        public static let decodingFailed = Code(.decodingFailed)
        /// A compressed payload could not be inflated: corrupt, or larger than the receiver's bound
        /// once inflated (a compression bomb). The link is not affected.
        public static let compressionFailed = Code(.compressionFailed)
        /// The fleet server that was running the request stopped before it answered (status
        /// `UNKNOWN` with detail `OUTCOME_UNKNOWN`): the request may or may not have taken effect,
        /// and the fleet does not run it again under its request id. The client resends it under a
        /// new id only when the caller marked it idempotent.
        public static let outcomeUnknown = Code(.outcomeUnknown)

        /// The status code to put on the wire for this error (codes that are not statuses map to
        /// the closest status: `UNAVAILABLE` for connection trouble, `INTERNAL` otherwise).
        public var status: StatusCode {
            switch wrapped {
            case .status(let raw): StatusCode(rawValue: raw)
            case .connectionRefused, .connectTimeout, .hostUnreachable, .addressResolutionFailed, .connectionReset,
                .connectionClosed, .connectionLost, .goAway, .shutdown, .tlsFailure, .ioFailure:
                .unavailable
            case .frameTooLarge: .resourceExhausted
            case .invalidConfiguration, .decodingFailed: .invalidArgument
            case .compressionFailed: .dataLoss
            case .protocolViolation: .internalError
            case .outcomeUnknown: .unknown
            }
        }

        /// A stable, readable name, for example `deadlineExceeded`.
        public var description: String {
            switch wrapped {
            case .status(let raw):
                switch raw {
                case 1: "cancelled"
                case 2: "unknown"
                case 3: "invalidArgument"
                case 4: "deadlineExceeded"
                case 5: "notFound"
                case 6: "alreadyExists"
                case 7: "permissionDenied"
                case 8: "resourceExhausted"
                case 9: "failedPrecondition"
                case 10: "aborted"
                case 11: "outOfRange"
                case 12: "unimplemented"
                case 13: "internalError"
                case 14: "unavailable"
                case 15: "dataLoss"
                case 16: "unauthenticated"
                default: "status(\(raw))"
                }
            case .connectionRefused: "connectionRefused"
            case .connectTimeout: "connectTimeout"
            case .hostUnreachable: "hostUnreachable"
            case .addressResolutionFailed: "addressResolutionFailed"
            case .connectionReset: "connectionReset"
            case .connectionClosed: "connectionClosed"
            case .connectionLost: "connectionLost"
            case .protocolViolation: "protocolViolation"
            case .frameTooLarge: "frameTooLarge"
            case .goAway: "goAway"
            case .shutdown: "shutdown"
            case .invalidConfiguration: "invalidConfiguration"
            case .tlsFailure: "tlsFailure"
            case .ioFailure: "ioFailure"
            case .decodingFailed: "decodingFailed"
            case .compressionFailed: "compressionFailed"
            case .outcomeUnknown: "outcomeUnknown"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable explanation. Never contains payloads or credentials.
    public var message: String
    /// True when the error is a status the server returned, false when the library detected it.
    public var isRemote: Bool
    /// The error that caused this one, if any (a malformed frame's `WireFormatError`, a system error).
    public var underlying: (any Error & Sendable)?
    /// The source file that raised the error (for bug reports).
    public var file: String
    /// The source line that raised the error.
    public var line: Int

    /// Creates an error.
    public init(
        code: Code, message: String, isRemote: Bool = false, underlying: (any Error & Sendable)? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.isRemote = isRemote
        self.underlying = underlying
        self.file = file
        self.line = line
    }

    /// `code: message (underlying)`.
    public var description: String {
        var text = "\(code): \(message)"
        if let underlying {
            text += " (\(underlying))"
        }
        return text
    }
}
