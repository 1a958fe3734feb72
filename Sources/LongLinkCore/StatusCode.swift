/// A status code on the wire: the gRPC status code numbers.
///
/// Unknown numbers are kept as they are (a newer peer may send them) and treated like
/// ``unknown`` by code that switches over the known ones.
public struct StatusCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code's number on the wire.
    public var rawValue: UInt32

    /// Wraps a code number.
    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// 0: success.
    public static let ok = StatusCode(rawValue: 0)
    /// 1: the caller cancelled.
    public static let cancelled = StatusCode(rawValue: 1)
    /// 2: an error with no better code.
    public static let unknown = StatusCode(rawValue: 2)
    /// 3: the request is malformed.
    public static let invalidArgument = StatusCode(rawValue: 3)
    /// 4: the deadline passed before the work finished.
    public static let deadlineExceeded = StatusCode(rawValue: 4)
    /// 5: the thing asked for does not exist.
    public static let notFound = StatusCode(rawValue: 5)
    /// 6: the thing to create exists already.
    public static let alreadyExists = StatusCode(rawValue: 6)
    /// 7: the caller may not do this.
    public static let permissionDenied = StatusCode(rawValue: 7)
    /// 8: a limit was reached (queue full, too many in flight, frame too large).
    public static let resourceExhausted = StatusCode(rawValue: 8)
    /// 9: the system is not in the state the call needs.
    public static let failedPrecondition = StatusCode(rawValue: 9)
    /// 10: aborted, typically by a conflict.
    public static let aborted = StatusCode(rawValue: 10)
    /// 11: a value outside its valid range.
    public static let outOfRange = StatusCode(rawValue: 11)
    /// 12: no handler for the method.
    public static let unimplemented = StatusCode(rawValue: 12)
    /// 13: an invariant broke in the server.
    public static let internalError = StatusCode(rawValue: 13)
    /// 14: the service is unavailable for now; retrying may work.
    public static let unavailable = StatusCode(rawValue: 14)
    /// 15: unrecoverable data loss.
    public static let dataLoss = StatusCode(rawValue: 15)
    /// 16: the caller is not (or no longer) authenticated.
    public static let unauthenticated = StatusCode(rawValue: 16)

    /// The gRPC name of the code, for example `DEADLINE_EXCEEDED`.
    public var description: String {
        switch rawValue {
        case 0: "OK"
        case 1: "CANCELLED"
        case 2: "UNKNOWN"
        case 3: "INVALID_ARGUMENT"
        case 4: "DEADLINE_EXCEEDED"
        case 5: "NOT_FOUND"
        case 6: "ALREADY_EXISTS"
        case 7: "PERMISSION_DENIED"
        case 8: "RESOURCE_EXHAUSTED"
        case 9: "FAILED_PRECONDITION"
        case 10: "ABORTED"
        case 11: "OUT_OF_RANGE"
        case 12: "UNIMPLEMENTED"
        case 13: "INTERNAL"
        case 14: "UNAVAILABLE"
        case 15: "DATA_LOSS"
        case 16: "UNAUTHENTICATED"
        default: "CODE_\(rawValue)"
        }
    }
}
