import LongLinkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed operating-system call, kept as the ``LongLinkCore/LongLinkError/underlying`` cause of the
/// transport's errors.
public struct SystemCallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `errno` value the call set.
    public let errno: Int32
    /// The name of the call, for example `connect`.
    public let function: String

    /// Creates the error for `function` failing with `errno`.
    public init(errno: Int32, function: String) {
        self.errno = errno
        self.function = function
    }

    /// `function: text of errno (errno N)`.
    public var description: String {
        "\(function): \(Sys.describe(errno: errno)) (errno \(errno))"
    }
}

extension LongLinkError {
    /// Maps a failed system call to a LongLink error code.
    ///
    /// `ECONNREFUSED` is `connectionRefused`; `ENETUNREACH`, `EHOSTUNREACH`, `ENETDOWN` and `EHOSTDOWN` are
    /// `hostUnreachable`; `ECONNRESET`, `EPIPE` and `ECONNABORTED` are `connectionReset`; `ETIMEDOUT` while
    /// connecting is `connectTimeout`; running out of descriptors or buffers is `resourceExhausted`;
    /// anything else is `ioFailure`. The message carries the `errno` text.
    static func system(
        errno code: Int32, function: String, connecting: Bool = false, file: String = #fileID, line: Int = #line
    ) -> LongLinkError {
        let cause = SystemCallError(errno: code, function: function)
        let mapped: Code
        switch code {
        case ECONNREFUSED:
            mapped = .connectionRefused
        case ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN:
            mapped = .hostUnreachable
        case ECONNRESET, EPIPE, ECONNABORTED:
            mapped = .connectionReset
        case ETIMEDOUT where connecting:
            mapped = .connectTimeout
        case EMFILE, ENFILE, ENOBUFS, ENOMEM:
            mapped = .resourceExhausted
        default:
            mapped = .ioFailure
        }
        return LongLinkError(
            code: mapped, message: "\(function) failed: \(Sys.describe(errno: code))", underlying: cause,
            file: file, line: line)
    }

    static func closedConnection(file: String = #fileID, line: Int = #line) -> LongLinkError {
        LongLinkError(code: .connectionClosed, message: "the connection is closed", file: file, line: line)
    }

    static func loopShutDown(file: String = #fileID, line: Int = #line) -> LongLinkError {
        LongLinkError(code: .shutdown, message: "the event loop was shut down", file: file, line: line)
    }

    static func taskCancelled(_ what: String, file: String = #fileID, line: Int = #line) -> LongLinkError {
        LongLinkError(code: .cancelled, message: "\(what) was cancelled", file: file, line: line)
    }
}
