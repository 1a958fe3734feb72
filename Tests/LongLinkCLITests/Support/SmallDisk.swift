import Foundation
import LongLinkTestSupport
import Testing

/// A small tmpfs mounted for one test (root only): a disk that fills up or turns read-only under
/// `longlink serve --data-dir`.
final class SmallDisk: Sendable {
    let directory: TemporaryDirectory
    var path: String { directory.path }

    /// Root, and `mount -t tmpfs` works here (not in every container).
    static let available: Bool = {
        guard geteuid() == 0, let disk = try? SmallDisk(megabytes: 1) else { return false }
        disk.unmount()
        return true
    }()

    static let skipReason: Comment =
        "a full or read-only disk needs root and mount -t tmpfs (CI runs as root); run swift test as root"

    /// Mounts a `megabytes` tmpfs on a new temporary directory.
    init(megabytes: Int) throws {
        directory = try TemporaryDirectory("small-disk")
        try Self.run(["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", directory.path])
    }

    /// `mount -o remount,ro|rw`.
    func remount(readOnly: Bool) throws {
        try Self.run(["mount", "-o", "remount,\(readOnly ? "ro" : "rw")", path])
    }

    /// Fills the disk with `path/filler` until it has no room; returns the bytes written.
    func fill() throws -> Int {
        let descriptor = open(path + "/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw ToolProcess.Failure(description: "could not create the filler") }
        defer { close(descriptor) }
        let block = [UInt8](repeating: 0xA5, count: 4096)
        var written = 0
        while true {
            let count = block.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            written += count
        }
        guard errno == ENOSPC else { throw ToolProcess.Failure(description: "filler stopped with errno \(errno)") }
        return written
    }

    /// Deletes the filler: the disk has room again.
    func free() throws {
        try FileManager.default.removeItem(atPath: path + "/filler")
    }

    func unmount() {
        _ = try? Subprocess.runBlocking(["umount", path], timeout: .seconds(10))
    }

    deinit {
        unmount()
    }

    private static func run(_ arguments: [String]) throws {
        let result = try Subprocess.runBlocking(arguments, timeout: .seconds(10))
        guard result.status == 0 else {
            throw ToolProcess.Failure(
                description: "\(arguments.joined(separator: " ")) failed (\(result.status)): \(result.errorOutput)")
        }
    }

    /// `PRAGMA quick_check` of the SQLite file at `path` with the sqlite3 CLI: "ok" when sound.
    static func quickCheck(_ path: String) async throws -> String {
        let result = try await Subprocess.run(["sqlite3", path, "PRAGMA quick_check"], timeout: .seconds(20))
        return (result.output + result.errorOutput).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
