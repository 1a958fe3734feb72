import Foundation

/// A ``HeartbeatStore`` in one JSON file, written atomically (a reader sees the old file or the new
/// one, never half of one) and readable by the owner only.
///
/// A missing file loads as nil; a file that is not a snapshot throws
/// ``HeartbeatStoreError/Kind-swift.enum/corrupt`` (the client logs it and learns afresh, and the
/// next save replaces the file).
public struct FileHeartbeatStore: HeartbeatStore {
    /// The file.
    public let path: String

    /// The largest file read: a snapshot of 1,024 networks is far smaller.
    static let maxFileBytes = 1 << 20

    /// A store in the file at `path` (its directory must exist).
    public init(path: String) {
        self.path = path
    }

    /// Reads the snapshot; nil when the file does not exist.
    public func load() throws -> HeartbeatSnapshot? {
        let url = URL(fileURLWithPath: path)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw HeartbeatStoreError(.unavailable, "cannot read \(path): \(error)")
        }
        guard data.count <= Self.maxFileBytes else {
            throw HeartbeatStoreError(.corrupt, "\(path) is \(data.count) bytes, over \(Self.maxFileBytes)")
        }
        do {
            return try JSONDecoder().decode(HeartbeatSnapshot.self, from: data)
        } catch {
            throw HeartbeatStoreError(.corrupt, "\(path) is not a heartbeat snapshot")
        }
    }

    /// Writes the snapshot atomically, mode 0600.
    public func save(_ snapshot: HeartbeatSnapshot) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            try encoder.encode(snapshot).write(to: URL(fileURLWithPath: path), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        } catch {
            throw HeartbeatStoreError(.unavailable, "cannot write \(path): \(error)")
        }
    }
}
