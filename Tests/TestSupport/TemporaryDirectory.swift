import Foundation

/// A fresh directory under the system's temporary directory, removed with everything in it when
/// the value is deinitialized.
package final class TemporaryDirectory: Sendable {
    package let path: String

    /// Makes `<tmp>/longlink-<label>-XXXXXX`.
    package init(_ label: String) throws {
        var template = Array((NSTemporaryDirectory() + "longlink-\(label)-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CocoaError(.fileWriteUnknown)
        }
        path = String(cString: made)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// `path/name`.
    package func appending(_ name: String) -> String { path + "/" + name }
}
