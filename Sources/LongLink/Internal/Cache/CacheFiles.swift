import Foundation
internal import LongLinkWire

/// The response cache on disk: one file per entry in a directory, for app restarts.
///
/// A file is written to a temporary name and renamed into place (`Data.WritingOptions.atomic`), so a
/// reader sees a whole file or none. Every file carries a magic number, the principal and key it
/// belongs to, its lengths and a checksum; a file that is truncated or corrupt is ignored and
/// removed, never fatal, and one of another principal or key (a name collision) is ignored.
///
/// The replies are the user's: the directory is made `0700` and every file `0600`, whatever the
/// process's umask.
struct CacheFiles: Sendable {
    let directory: URL

    private static let magic: [UInt8] = Array("LLC1".utf8)
    private static let principalFile = "principal"

    init(directory: String) {
        self.directory = URL(fileURLWithPath: directory, isDirectory: true)
        let owner: [FileAttributeKey: Any] = [.posixPermissions: 0o700]
        try? FileManager.default.createDirectory(
            at: self.directory, withIntermediateDirectories: true, attributes: owner)
        // A directory that was there already (or made under a umask that masks the mode) too.
        try? FileManager.default.setAttributes(owner, ofItemAtPath: self.directory.path)
    }

    /// Writes `bytes` to `file` atomically, readable and writable by the owner only.
    private static func write(_ bytes: [UInt8], to file: URL) {
        guard (try? Data(bytes).write(to: file, options: .atomic)) != nil else { return }
        try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
    }

    struct Stored: Equatable {
        var principal: String
        var key: String
        var method: String
        var payload: [UInt8]
        /// When it was stored, as wall-clock seconds since 1970 (survives restarts, unlike instants).
        var storedAt: Double
    }

    private func url(for key: String) -> URL {
        directory.appendingPathComponent(String(Self.fnv1a(Array(key.utf8)), radix: 16) + ".entry")
    }

    func write(_ stored: Stored) {
        var bytes = Self.magic
        Self.append(stored.storedAt.bitPattern, to: &bytes)
        for field in [Array(stored.principal.utf8), Array(stored.key.utf8), Array(stored.method.utf8), stored.payload] {
            Self.append(UInt64(field.count), to: &bytes)
            bytes += field
        }
        Self.append(Self.fnv1a(bytes), to: &bytes)
        Self.write(bytes, to: url(for: stored.key))
    }

    /// The entry for `key` of `principal`, or nil (a bad file is removed).
    func read(_ key: String, principal: String) -> Stored? {
        let file = url(for: key)
        guard let data = try? Data(contentsOf: file) else { return nil }
        guard let stored = Self.parse(Array(data)) else {
            try? FileManager.default.removeItem(at: file)
            return nil
        }
        // Another principal's, or another key with the same name: valid, just not this one.
        return stored.key == key && PrincipalKey.same(stored.principal, principal) ? stored : nil
    }

    func remove(_ key: String) {
        try? FileManager.default.removeItem(at: url(for: key))
    }

    func removeAll() {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in files where name.hasSuffix(".entry") {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    /// Records the principal the files belong to; when it differs from the recorded one, every
    /// entry is removed first (another user's replies must not be served).
    func adopt(principal: String) {
        let file = directory.appendingPathComponent(Self.principalFile)
        let recorded = (try? Data(contentsOf: file)).map { String(decoding: $0, as: UTF8.self) }
        guard !PrincipalKey.same(recorded, principal) else { return }
        removeAll()
        Self.write(Array(principal.utf8), to: file)
    }

    static func parse(_ bytes: [UInt8]) -> Stored? {
        guard bytes.count >= 4 + 8 + 4 * 8 + 8, Array(bytes[0..<4]) == magic else { return nil }
        let body = bytes.count - 8
        guard read64(bytes, at: body) == fnv1a(Array(bytes[0..<body])) else { return nil }
        var offset = 4
        let storedAt = Double(bitPattern: read64(bytes, at: offset))
        offset += 8
        var fields: [[UInt8]] = []
        for _ in 0..<4 {
            guard offset + 8 <= body else { return nil }
            let length = read64(bytes, at: offset)
            offset += 8
            guard length <= UInt64(body - offset) else { return nil }
            fields.append(Array(bytes[offset..<offset + Int(length)]))
            offset += Int(length)
        }
        guard offset == body else { return nil }
        return Stored(
            principal: String(decoding: fields[0], as: UTF8.self), key: String(decoding: fields[1], as: UTF8.self),
            method: String(decoding: fields[2], as: UTF8.self), payload: fields[3], storedAt: storedAt)
    }

    private static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    private static func read64(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << UInt64(8 * $1) }
    }

    /// FNV-1a, 64 bits: file names and checksums (not a defence against tampering).
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}
