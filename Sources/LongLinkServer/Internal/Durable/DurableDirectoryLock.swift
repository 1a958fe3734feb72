#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The data directory of a durable store, held for the store's life by an exclusive `flock` on
/// its lock file: a second store on the same directory, in this process or another, is refused
/// rather than let two writers number one principal's pushes. The kernel drops the lock when the
/// process dies, however it dies, so a crash never leaves the directory locked.
final class DurableDirectoryLock: Sendable {
    /// The lock file's name in the directory.
    static let fileName = "longlink.lock"

    let path: String
    private let descriptor: Int32

    /// Creates `directory` when missing (its parents too) and takes its lock. Throws
    /// ``LongLinkError/Code-swift.struct/failedPrecondition`` naming the lock file when another
    /// store holds it, and ``LongLinkError/Code-swift.struct/unavailable`` naming the path when the
    /// directory cannot be made or the lock file opened.
    init(directory: String) throws(LongLinkError) {
        try Self.makeDirectory(directory)
        path = Self.join(directory, Self.fileName)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw Self.failure(errno, "could not open the lock file \(path)")
        }
        guard Self.lock(descriptor) else {
            let code = errno
            let holder = Self.holder(descriptor)
            close(descriptor)
            if code == EWOULDBLOCK {
                throw LongLinkError(
                    code: .failedPrecondition,
                    message:
                        "\(directory) is in use by another durable store\(holder.map { " (process \($0))" } ?? "")"
                        + ": its lock file \(path) is held; a data directory serves one store at a time")
            }
            throw Self.failure(code, "could not lock \(path)")
        }
        // Who holds it, for the message a second store gets; best effort.
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Takes the lock, trying again for up to a second while it is held: a child process forked
    /// by this one (the lock file is close-on-exec, but a fork holds it until its exec) can keep a
    /// lock just released for a moment. A store that really holds it still holds it after that.
    private static func lock(_ descriptor: Int32) -> Bool {
        for _ in 0..<50 {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
            guard errno == EWOULDBLOCK else { return false }
            usleep(20_000)
        }
        return flock(descriptor, LOCK_EX | LOCK_NB) == 0
    }

    /// `directory/name`.
    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// The process id written in a held lock file, if it reads as one.
    private static func holder(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n").first ?? "")
    }

    /// `mkdir -p`: each missing component is made (0755); one that exists and is not a directory fails.
    private static func makeDirectory(_ directory: String) throws(LongLinkError) {
        guard !directory.isEmpty else {
            throw LongLinkError(code: .invalidConfiguration, message: "the durable store's directory is empty")
        }
        var prefix = directory.hasPrefix("/") ? "/" : ""
        for component in directory.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o755) != 0, errno != EEXIST {
                throw failure(errno, "could not create the directory \(prefix)")
            }
            prefix += "/"
        }
        var status = stat()
        guard stat(directory, &status) == 0 else { throw failure(errno, "could not read \(directory)") }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw LongLinkError(
                code: .invalidConfiguration,
                message: "\(directory) is not a directory (the durable store's data directory)")
        }
    }

    private static func failure(_ code: Int32, _ what: String) -> LongLinkError {
        LongLinkError(code: .unavailable, message: "\(what): \(String(cString: strerror(code)))")
    }
}
