import Foundation
import LongLinkWire

/// `longlink-bench wire`: encode and decode throughput of the frame codec.
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

    /// Adds encode and decode rates of both workloads to `report`. Each measurement lasts a fifth of
    /// `--duration` (the codec is fast and steady; 20 of them at the full duration would be long).
    static func run(_ settings: BenchSettings, into report: inout BenchReport) {
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
        let perRun = settings.duration / 5
        var checksum = 0
        for workload in workloads {
            benchProgress("wire: \(workload.name)")
            let key = workload.name == "small request" ? "small_request" : "push_64k"
            let wireBytes = Double(workload.frame.delimitedBytes.count)
            let encodes = (0..<settings.runs).map { _ in encodeRate(workload, for: perRun, checksum: &checksum) }
            let decodes = (0..<settings.runs).map { _ in decodeRate(workload, for: perRun, checksum: &checksum) }
            let note = "\(workload.frame.encodedSize)-byte frame; MB/s = frames/s x \(Int(wireBytes)) wire bytes / 10^6"
            report.add(
                BenchFigure(
                    key: "wire.\(key).encode", label: "wire encode, \(workload.name)", unit: "frames/s",
                    samples: encodes, note: note))
            report.add(
                BenchFigure(
                    key: "wire.\(key).decode", label: "wire decode, \(workload.name)", unit: "frames/s",
                    samples: decodes))
            report.add(
                BenchFigure(
                    key: "wire.\(key).decode_bandwidth", label: "wire decode bandwidth, \(workload.name)", unit: "MB/s",
                    samples: decodes.map { $0 * wireBytes / 1e6 }))
        }
        if checksum == 42 { report.notes.append("wire checksum 42") }  // keeps the work observable
        report.notes.append("wire: the frame codec alone, in memory; no baseline client applies to these rows.")
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
        return Double(frames) / elapsed.inSeconds
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
        return Double(frames) / elapsed.inSeconds
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
