/// A principal name as the package compares it: by its UTF-8 bytes.
///
/// Swift's `String` equality is canonical equivalence, so `"caf\u{E9}"` and `"cafe\u{301}"` are
/// equal as `String`s (and hash alike) while Redis, the wire and every other program see two
/// names. Every table keyed by principal (the server's connections and push logs, the de-dup
/// window, the fleet's channels, the client's cache) uses this key instead, so that a principal is
/// the same bytes everywhere.
package struct PrincipalKey: Hashable, Sendable, CustomStringConvertible {
    package let name: String

    package init(_ name: String) {
        self.name = name
    }

    package var description: String { name }

    package static func == (lhs: PrincipalKey, rhs: PrincipalKey) -> Bool {
        sameBytes(lhs.name, rhs.name)
    }

    /// Compares the contiguous bytes (what a table lookup does per push and per request), eight at
    /// a time: iterating the UTF-8 views, or `elementsEqual` on the buffers, costs a step per byte.
    private static func sameBytes(_ lhs: String, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { lhs in
            rhs.withUTF8 { rhs in equal(UnsafeRawBufferPointer(lhs), UnsafeRawBufferPointer(rhs)) }
        }
    }

    /// Whether two buffers of the same length hold the same bytes.
    private static func equal(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset + 8 <= lhs.count {
            guard
                lhs.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    == rhs.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            else { return false }
            offset += 8
        }
        while offset < lhs.count {
            guard lhs[offset] == rhs[offset] else { return false }
            offset += 1
        }
        return true
    }

    package func hash(into hasher: inout Hasher) {
        var name = name
        name.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        // The length too, so that a key hashed after it cannot shift bytes across the boundary.
        hasher.combine(name.utf8.count)
    }

    /// Whether two principal names are the same bytes (two nils are the same: no principal).
    package static func same(_ lhs: String?, _ rhs: String?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case (let lhs?, let rhs?): sameBytes(lhs, rhs)
        default: false
        }
    }
}
