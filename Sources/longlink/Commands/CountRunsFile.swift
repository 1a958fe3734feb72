import Foundation
import LongLinkCLISupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The runs of `count`, one line each (`["client id","request id"]`, JSON), appended with one
/// `write` per run: the kernel keeps a written line when the process is killed, so a restarted
/// `serve --data-dir` counts the old process's runs too. A torn last line is skipped.
final class CountRunsFile: Sendable {
    let path: String
    private let descriptor: Int32

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(path: String) throws {
        self.path = path
        descriptor = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw Failure(description: "could not open \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        close(descriptor)
    }

    /// Every complete line, in order.
    func readAll() throws -> [(clientID: String, requestID: String)] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.split(separator: UInt8(ascii: "\n")).compactMap { line in
            guard let pair = try? JSONSerialization.jsonObject(with: Data(line)) as? [String], pair.count == 2 else {
                return nil
            }
            return (pair[0], pair[1])
        }
    }

    /// Appends one run; a failed write is ignored (the count is a test aid, not the server's state).
    func append(clientID: String, requestID: String) {
        let line = Array("[\(JSONObject.quoted(clientID)),\(JSONObject.quoted(requestID))]\n".utf8)
        _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}
