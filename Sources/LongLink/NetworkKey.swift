/// The network a client is on, as the app names it, so that an adaptive heartbeat (see
/// ``HeartbeatPolicy/adaptive(_:)``) learns each network's NAT apart from the others.
///
/// The library does not read the radio: the app tells the client which network it is on through
/// ``LongLinkClient/networkDidChange(to:)`` (from `NWPathMonitor`, say), and may name networks more
/// finely than Wi-Fi and cellular (an SSID hash, a carrier) with ``named(_:)``.
public struct NetworkKey: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The key as stored: `"wifi"`, `"cellular"`, or `"name:"` followed by the app's name.
    public let rawValue: String

    private init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Any Wi-Fi network.
    public static let wifi = NetworkKey(rawValue: "wifi")
    /// Any cellular network.
    public static let cellular = NetworkKey(rawValue: "cellular")
    /// A network the app names itself; at most 128 bytes of it are kept (a longer name is cut, so
    /// that a stored snapshot stays small).
    public static func named(_ name: String) -> NetworkKey {
        // Cut at a scalar's edge, so that the kept bytes stay valid UTF-8.
        var bytes = 0
        var end = name.unicodeScalars.startIndex
        for index in name.unicodeScalars.indices {
            let width = UTF8.width(name.unicodeScalars[index])
            guard bytes + width <= 128 else { break }
            bytes += width
            end = name.unicodeScalars.index(after: index)
        }
        return NetworkKey(rawValue: "name:" + String(name.unicodeScalars[..<end]))
    }

    /// The network when the app says nothing: one key for every network.
    public static let unspecified = NetworkKey(rawValue: "unspecified")

    /// The stored form.
    public var description: String { rawValue }

    /// Decodes the stored form (any string: a key written by a later version is kept as it is).
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes the stored form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
