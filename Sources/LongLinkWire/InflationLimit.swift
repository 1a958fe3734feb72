/// How far one compressed payload may inflate, and which bound sets that: the receiver's frame
/// limit, the ratio of inflated to compressed bytes, or (on the server) what is left of the
/// connection's budget of inflated bytes held by running handlers.
///
/// The ratio bound keeps the work a receiver does for a payload proportional to the bytes it was
/// sent: without it, 4 KB of zlib inflate to 4 MiB and cost a thousand times the CPU of reading
/// them. Any payload may inflate to ``ratioFloor`` bytes, so that small, very regular payloads
/// (which compress far better than 1:64) still pass.
package struct InflationLimit: Sendable, Equatable {
    /// Which bound a limit comes from.
    package enum Bound: Sendable, Equatable {
        case frame
        case ratio
        case budget
    }

    /// The most bytes the payload may inflate to.
    package let bytes: Int
    /// The bound that sets ``bytes`` (the smallest of them).
    package let bound: Bound
    /// The ratio in force (inflated bytes per compressed byte), for the error's text.
    package let ratio: Int

    /// What any payload may inflate to, whatever its ratio.
    package static let ratioFloor = 64 << 10

    /// A limit of `bytes`, set by `bound`.
    package init(bytes: Int, bound: Bound, ratio: Int = 0) {
        (self.bytes, self.bound, self.ratio) = (max(0, bytes), bound, ratio)
    }

    /// The limit of a payload of `compressedBytes`: the smallest of `maxFrameBytes`, `ratio` times
    /// the payload (at least ``ratioFloor``) and `budget`.
    package init(compressedBytes: Int, maxFrameBytes: Int, ratio: Int, budget: Int = .max) {
        let (scaled, overflow) = compressedBytes.multipliedReportingOverflow(by: max(1, ratio))
        let byRatio = overflow ? Int.max : max(scaled, Self.ratioFloor)
        self.ratio = ratio
        if budget < min(maxFrameBytes, byRatio) {
            (bytes, bound) = (max(0, budget), .budget)
        } else if byRatio < maxFrameBytes {
            (bytes, bound) = (byRatio, .ratio)
        } else {
            (bytes, bound) = (maxFrameBytes, .frame)
        }
    }

    /// Why a payload past this limit is refused.
    package var exceededMessage: String {
        switch bound {
        case .frame: "compressed payload inflates to more than \(bytes) bytes (the frame limit)"
        case .ratio: "compressed payload inflates to more than \(bytes) bytes (more than 1:\(ratio) of its size)"
        case .budget:
            "compressed payload inflates to more than the \(bytes) bytes left of this connection's budget of "
                + "inflated bytes held by running handlers"
        }
    }
}

/// Why a compressed payload was not inflated.
package enum InflationError: Error {
    /// It inflates past its ``InflationLimit``: inflating stopped there.
    case exceeded(InflationLimit)
    /// Corrupt, truncated, followed by extra bytes, of an unknown compression, or on a link that
    /// did not agree to compression.
    case invalid(LongLinkError)

    /// The error as the receiving app sees it: ``LongLinkError/Code-swift.struct/compressionFailed``.
    package var error: LongLinkError {
        switch self {
        case .exceeded(let limit): LongLinkError(code: .compressionFailed, message: limit.exceededMessage)
        case .invalid(let error): error
        }
    }
}
