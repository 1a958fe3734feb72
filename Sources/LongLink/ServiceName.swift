/// The name of a service of ``LongLinkServices``; a string literal works where one is expected.
public struct ServiceName: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The name.
    public var rawValue: String

    /// A name.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// A name from a string literal.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// The name, as written.
    public var description: String { rawValue }

    /// Names sort as their strings do.
    public static func < (lhs: ServiceName, rhs: ServiceName) -> Bool { lhs.rawValue < rhs.rawValue }
}
