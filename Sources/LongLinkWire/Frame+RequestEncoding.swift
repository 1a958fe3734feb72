extension Frame {
    /// Appends a `Request` frame as it goes on the wire, with its id written from a number.
    ///
    /// The bytes are exactly those of
    /// `Frame.request(Frame.Request(requestID: String(requestNumber), …)).encodeDelimited(into:)`;
    /// this form makes neither the id's `String` nor the `Frame` value, because the client writes
    /// one request per call on its loop, where those allocations would be a large share of its work.
    package static func encodeDelimitedRequest(
        requestNumber: UInt64, method: String, payload: [UInt8], timeoutMilliseconds: UInt32,
        metadata: [String: String], compression: UInt32 = 0, into buffer: inout [UInt8]
    ) {
        let idLength = decimalDigitCount(requestNumber)
        let bodySize =
            ProtobufWriter.delimitedFieldSize(1, length: idLength) + ProtobufWriter.stringFieldSize(2, method)
            + ProtobufWriter.bytesFieldSize(3, payload)
            + ProtobufWriter.varintFieldSize(4, UInt64(timeoutMilliseconds))
            + ProtobufWriter.stringMapFieldSize(5, metadata)
            + ProtobufWriter.varintFieldSize(6, UInt64(compression))
        let frameSize = ProtobufWriter.delimitedFieldSize(requestFieldNumber, length: bodySize)
        ProtobufWriter.append(to: &buffer, reserving: ProtobufWriter.varintSize(UInt64(frameSize)) + frameSize) {
            writer in
            writer.writeVarint(UInt64(frameSize))
            writer.writeDelimitedHeader(requestFieldNumber, length: bodySize)
            writer.writeDelimitedHeader(1, length: idLength)
            writer.writeDecimal(requestNumber, digits: idLength)
            writer.writeStringField(2, method)
            writer.writeBytesField(3, payload)
            writer.writeUInt32Field(4, timeoutMilliseconds)
            writer.writeStringMapField(5, metadata)
            writer.writeUInt32Field(6, compression)
        }
    }

    /// The number a request id written by ``encodeDelimitedRequest(requestNumber:method:payload:timeoutMilliseconds:metadata:compression:into:)``
    /// stands for: nil unless `requestID` is exactly such an id (decimal digits, no sign, no
    /// leading zero, at most `UInt64.max`), because ids match as strings and "07" is not "7".
    ///
    /// The client maps every reply's id back to its call with this, on its loop for every reply;
    /// `UInt64(_:)` would also take "+7" and "007".
    package static func requestNumber(fromID requestID: String) -> UInt64? {
        var value: UInt64 = 0
        var digits = 0
        for byte in requestID.utf8 {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10, !(digits == 1 && value == 0) else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            digits += 1
        }
        return digits == 0 ? nil : value
    }

    /// The `body` field number of `Request` in the `Frame` message.
    private static let requestFieldNumber = 3

    /// How many decimal digits `value` takes (1 for 0).
    static func decimalDigitCount(_ value: UInt64) -> Int {
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        return digits
    }
}

extension ProtobufWriter {
    /// Appends `value` in decimal ASCII, `digits` long (as ``Frame/decimalDigitCount(_:)`` counts it).
    mutating func writeDecimal(_ value: UInt64, digits: Int) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var rest = value
            var index = start + digits - 1
            while rest > 0 {
                buffer[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
                index -= 1
            }
        }
    }
}
