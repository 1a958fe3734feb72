import FuzzKit
import LongLinkWire

/// The frame decoder fed arbitrary bytes, whole and in chunks split where the input says.
///
/// Input: a header (a frame limit selector, split sizes), then the stream. The same stream is
/// decoded three ways (appended whole and drained with `next()`, fed in the chunks to
/// `decode(_:into:)`, and one byte at a time), and all three must agree on every frame and on the
/// error, whatever the split: the "sticky packet" promise. Decoded frames must also survive a
/// re-encoding, and the decoder never holds more than one incomplete frame.
@_cdecl("LLVMFuzzerTestOneInput")
public func frameDecoderFuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    let limits: [Int] = [0, 1, 16, 200, 4_096, Frame.defaultMaxFrameBytes]
    let maxFrameBytes = limits[input.int(below: limits.count)]
    let decodingLimits =
        input.bool() ? Frame.DecodingLimits(maxMapEntries: 4, maxRepeatedValues: 8) : .unlimited
    var splits: [Int] = []
    for _ in 0..<input.int(below: 16) { splits.append(Int(input.varint() % 4_096)) }
    let stream = input.chunk()

    let whole = decodeWhole(stream, maxFrameBytes, decodingLimits)
    let chunked = decodeChunks(stream, splits, maxFrameBytes, decodingLimits)
    let bytewise = decodeChunks(stream, [Int](repeating: 1, count: stream.count), maxFrameBytes, decodingLimits)
    check(whole == chunked, "whole and chunked decoding differ: \(whole) vs \(chunked)")
    check(whole == bytewise, "whole and byte-at-a-time decoding differ")

    for frame in whole.frames {
        var bytes: [UInt8] = []
        frame.encode(into: &bytes)
        let again = Result { () throws(WireFormatError) in try Frame(decoding: bytes) }
        check(again == .success(frame), "\(frame) re-encoded decodes as \(again)")
    }
    return 0
}

/// What a decoding produced: its frames, in order, and the error it stopped at.
struct Outcome: Equatable {
    var frames: [Frame] = []
    var error: WireFormatError?
}

private func decodeWhole(
    _ stream: UnsafeRawBufferPointer, _ maxFrameBytes: Int, _ limits: Frame.DecodingLimits
) -> Outcome {
    var decoder = FrameDecoder(maxFrameBytes: maxFrameBytes, limits: limits)
    var outcome = Outcome()
    decoder.append(stream)
    do {
        while let frame = try decoder.next() { outcome.frames.append(frame) }
    } catch {
        outcome.error = error
    }
    return outcome
}

private func decodeChunks(
    _ stream: UnsafeRawBufferPointer, _ splits: [Int], _ maxFrameBytes: Int, _ limits: Frame.DecodingLimits
) -> Outcome {
    var decoder = FrameDecoder(maxFrameBytes: maxFrameBytes, limits: limits)
    var outcome = Outcome()
    var index = 0
    var splits = splits[...]
    while index < stream.count {
        let size = min(splits.popFirst() ?? stream.count, stream.count - index)
        do {
            try decoder.decode(UnsafeRawBufferPointer(rebasing: stream[index..<index + size]), into: &outcome.frames)
        } catch {
            outcome.error = error
            return outcome
        }
        index += size
        check(decoder.consumedByteCount + decoder.bufferedByteCount == index, "bytes lost or invented")
        check(decoder.bufferedByteCount < maxFrameBytes + 10, "more than one incomplete frame held")
    }
    // A stream that ends mid-frame is no error: the rest may still come.
    return outcome
}
