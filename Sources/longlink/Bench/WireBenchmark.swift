import Foundation
import LongLinkWire

/// `longlink bench wire`: encode and decode throughput of the frame codec.
///
/// Two workloads: small request frames (about 40 bytes, the shape of most calls) and large push
/// frames (a 64 KiB payload). Encoding appends delimited frames to a reused buffer; decoding runs
/// `FrameDecoder.decode(_:into:)` over an encoded stream, the path a connection's read callback
/// takes. Each measurement is repeated and the median reported.
enum WireBenchmark {
    private struct Workload {
        var name: String
        var frame: Frame
        /// Frames per batch: enough that one batch is a few hundred KiB at most.
        var batch: Int
    }

    private static let runs = 5

    /// Runs every measurement for about `seconds` in total and returns a printable report.
    static func run(seconds: Double) -> String {
        let small = Frame.request(
            Frame.Request(
                requestID: "1234567890", method: "quotes.get", payload: Array(0..<10), timeoutMilliseconds: 5_000))
        let large = Frame.push(
            Frame.Push(
                seq: 1_234_567, topic: "quotes/AAPL", payload: (0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        )
        let workloads = [
            Workload(name: "small request", frame: small, batch: 1_000),
            Workload(name: "64 KiB push", frame: large, batch: 8),
        ]
        let perRun = Duration.seconds(max(seconds, 0.1) / Double(workloads.count * 2 * runs))

        var lines = [
            "LongLink wire codec benchmark (\(runs) runs each, median; \(String(format: "%.1f", seconds)) s in all)",
            pad("workload", 16) + pad("frame bytes", 13) + pad("encode frames/s", 17) + pad("encode MB/s", 13)
                + pad("decode frames/s", 17) + "decode MB/s",
        ]
        var checksum = 0
        for workload in workloads {
            let frameBytes = workload.frame.encodedSize
            let wireBytes = workload.frame.delimitedBytes.count
            let encodes = median((0..<runs).map { _ in encodeRate(workload, for: perRun, checksum: &checksum) })
            let decodes = median((0..<runs).map { _ in decodeRate(workload, for: perRun, checksum: &checksum) })
            lines.append(
                pad(workload.name, 16) + pad("\(frameBytes)", 13) + pad(format(encodes), 17)
                    + pad(format(encodes * Double(wireBytes) / 1e6), 13) + pad(format(decodes), 17)
                    + format(decodes * Double(wireBytes) / 1e6))
        }
        lines.append("(MB = 10^6 bytes on the wire, length prefix included; checksum \(checksum & 0xFFFF))")
        return lines.joined(separator: "\n")
    }

    /// Frames per second for encoding `workload.batch` frames into a reused buffer.
    private static func encodeRate(_ workload: Workload, for duration: Duration, checksum: inout Int) -> Double {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(workload.frame.delimitedBytes.count * workload.batch)
        let frame = workload.frame
        var frames = 0
        let clock = ContinuousClock()
        let start = clock.now
        var elapsed = Duration.zero
        repeat {
            for _ in 0..<workload.batch {
                frame.encodeDelimited(into: &buffer)
            }
            checksum &+= buffer.count
            buffer.removeAll(keepingCapacity: true)
            frames += workload.batch
            elapsed = clock.now - start
        } while elapsed < duration
        return Double(frames) / seconds(elapsed)
    }

    /// Frames per second for decoding a stream of `workload.batch` frames in one call.
    private static func decodeRate(_ workload: Workload, for duration: Duration, checksum: inout Int) -> Double {
        var stream: [UInt8] = []
        for _ in 0..<workload.batch {
            workload.frame.encodeDelimited(into: &stream)
        }
        var decoder = FrameDecoder()
        var decoded: [Frame] = []
        decoded.reserveCapacity(workload.batch)
        var frames = 0
        let clock = ContinuousClock()
        let start = clock.now
        var elapsed = Duration.zero
        repeat {
            stream.withUnsafeBytes { bytes in
                do {
                    try decoder.decode(bytes, into: &decoded)
                } catch {
                    fatalError("benchmark stream failed to decode: \(error)")
                }
            }
            checksum &+= decoded.count
            decoded.removeAll(keepingCapacity: true)
            frames += workload.batch
            elapsed = clock.now - start
        } while elapsed < duration
        return Double(frames) / seconds(elapsed)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    private static func format(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : String(format: "%.1f", value)
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

extension Frame {
    /// The frame with its length prefix, as one array.
    fileprivate var delimitedBytes: [UInt8] {
        var bytes: [UInt8] = []
        encodeDelimited(into: &bytes)
        return bytes
    }
}
