/// An incremental RESP3 parser: append bytes as they arrive, take complete values out.
///
/// A plain value. It scans a value's elements as their bytes come, remembering only the scan
/// position and how many elements each open aggregate still lacks, so a reply split over many
/// reads is scanned once; when the scan completes a top-level value, the value is built from the
/// buffer in one pass. Every length and count is checked against ``Limits`` before anything is
/// allocated for it, so hostile bytes end in a ``RESPParseError``, never in a trap or in memory
/// beyond the bounds. After an error the parser stays failed.
struct RESPParser: Sendable {
    /// Bounds on what one value may claim.
    struct Limits: Sendable, Equatable {
        /// The longest bulk string, blob error or verbatim string.
        var maxBulkLength = 64 << 20
        /// The most elements of one array, set or push (pairs of one map or attribute).
        var maxAggregateCount = 1 << 20
        /// The deepest nesting of aggregates.
        var maxDepth = 32
        /// The longest header or simple line.
        var maxLineLength = 64 << 10
        /// The most bytes of one top-level value.
        var maxValueBytes = 256 << 20
    }

    let limits: Limits
    private var buffer: [UInt8] = []
    /// Where the top-level value being scanned starts.
    private var start = 0
    /// Where the next element to scan starts.
    private var scanned = 0
    /// Elements still missing from each open aggregate, innermost last.
    private var open: [Int] = []
    /// Bytes dropped from the buffer's front so far, for error offsets.
    private var dropped = 0
    private var failure: RESPParseError?

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes held for values not complete yet.
    var bufferedByteCount: Int { buffer.count - start }

    /// Appends bytes read from the connection.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Appends bytes (tests and the fuzz target).
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next complete value, or nil until more bytes arrive.
    mutating func next() throws(RESPParseError) -> RESPValue? {
        if let failure { throw failure }
        do {
            while scanned < buffer.count || (open.isEmpty && scanned > start) {
                if open.isEmpty && scanned > start {
                    var index = start
                    let value = build(at: &index)
                    start = index
                    return value
                }
                guard try scanElement() else { return nil }
            }
            return nil
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func compact() {
        if start == buffer.count {
            dropped += start
            scanned -= start
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            start = 0
        } else if start > 4096 && start * 2 > buffer.count {
            dropped += start
            scanned -= start
            buffer.removeFirst(start)
            start = 0
        }
    }

    // MARK: Scanning

    /// The type bytes of RESP3 (streamed strings and aggregates excepted).
    private static let types: Set<UInt8> = Set("+-:$_,#!=(*%~|>".utf8)

    private func error(_ reason: RESPParseError.Reason, at index: Int) -> RESPParseError {
        RESPParseError(reason: reason, offset: dropped + index)
    }

    /// The end of the line starting at `index` (the position of its CR), or nil while incomplete.
    private func lineEnd(from index: Int) throws(RESPParseError) -> Int? {
        var cursor = index
        let limit = min(buffer.count, index + limits.maxLineLength + 2)
        while cursor + 1 < limit {
            if buffer[cursor] == 13 && buffer[cursor + 1] == 10 { return cursor }
            cursor += 1
        }
        if buffer.count - index >= limits.maxLineLength + 2 { throw error(.lineTooLong, at: index) }
        return nil
    }

    /// Scans one element at ``scanned``; false when its bytes are not all there yet.
    private mutating func scanElement() throws(RESPParseError) -> Bool {
        let at = scanned
        let type = buffer[at]
        guard Self.types.contains(type) else { throw error(.unknownType(type), at: at) }
        guard let end = try lineEnd(from: at + 1) else { return false }
        let line = at + 1..<end
        var next = end + 2
        var children = 0
        switch type {
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            break
        case UInt8(ascii: ":"):
            guard parseInteger(line) != nil else { throw error(.malformedLine, at: at) }
        case UInt8(ascii: "("):
            guard isBigNumber(line) else { throw error(.malformedLine, at: at) }
        case UInt8(ascii: ","):
            guard parseDouble(line) != nil else { throw error(.malformedLine, at: at) }
        case UInt8(ascii: "#"):
            guard line.count == 1,
                buffer[line.lowerBound] == UInt8(ascii: "t") || buffer[line.lowerBound] == UInt8(ascii: "f")
            else { throw error(.malformedLine, at: at) }
        case UInt8(ascii: "_"):
            guard line.isEmpty else { throw error(.malformedLine, at: at) }
        case UInt8(ascii: "$"), UInt8(ascii: "!"), UInt8(ascii: "="):
            guard let length = parseInteger(line), length >= -1 else { throw error(.malformedLine, at: at) }
            if length == -1 {
                guard type == UInt8(ascii: "$") else { throw error(.malformedLine, at: at) }
                break
            }
            guard length <= limits.maxBulkLength else { throw error(.bulkTooLong(length), at: at) }
            if type == UInt8(ascii: "=") && length < 4 { throw error(.malformedLine, at: at) }
            try checkValueSize(upTo: next + Int(length) + 2, at: at)
            guard buffer.count >= next + Int(length) + 2 else { return false }
            if type == UInt8(ascii: "=") && buffer[next + 3] != UInt8(ascii: ":") {
                throw error(.malformedLine, at: at)
            }
            next += Int(length)
            guard buffer[next] == 13, buffer[next + 1] == 10 else { throw error(.missingTerminator, at: next) }
            next += 2
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"), UInt8(ascii: "%"), UInt8(ascii: "|"):
            guard let count = parseInteger(line), count >= -1 else { throw error(.malformedLine, at: at) }
            if count == -1 {
                guard type == UInt8(ascii: "*") else { throw error(.malformedLine, at: at) }
                break
            }
            guard count <= limits.maxAggregateCount else { throw error(.aggregateTooLarge(count), at: at) }
            guard open.count < limits.maxDepth else { throw error(.tooDeep, at: at) }
            let isPaired = type == UInt8(ascii: "%") || type == UInt8(ascii: "|")
            children = isPaired ? Int(count) * 2 : Int(count)
            // Attributes describe the value that follows them: one more element, counted with them.
            if type == UInt8(ascii: "|") { children += 1 }
        default:
            throw error(.unknownType(type), at: at)
        }
        try checkValueSize(upTo: next, at: at)
        scanned = next
        if children > 0 {
            open.append(children)
        } else {
            elementCompleted()
        }
        return true
    }

    private func checkValueSize(upTo end: Int, at index: Int) throws(RESPParseError) {
        if end - start > limits.maxValueBytes { throw error(.valueTooLarge, at: index) }
    }

    private mutating func elementCompleted() {
        while let last = open.last {
            if last > 1 {
                open[open.count - 1] = last - 1
                return
            }
            open.removeLast()
        }
    }

    // MARK: Lines

    private func parseInteger(_ range: Range<Int>) -> Int64? {
        var index = range.lowerBound
        var negative = false
        if index < range.upperBound, buffer[index] == UInt8(ascii: "-") || buffer[index] == UInt8(ascii: "+") {
            negative = buffer[index] == UInt8(ascii: "-")
            index += 1
        }
        guard index < range.upperBound else { return nil }
        var value: Int64 = 0
        while index < range.upperBound {
            let digit = buffer[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) =
                negative
                ? times.subtractingReportingOverflow(Int64(digit)) : times.addingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            index += 1
        }
        return value
    }

    private func isBigNumber(_ range: Range<Int>) -> Bool {
        var index = range.lowerBound
        if index < range.upperBound, buffer[index] == UInt8(ascii: "-") || buffer[index] == UInt8(ascii: "+") {
            index += 1
        }
        guard index < range.upperBound else { return false }
        return buffer[index..<range.upperBound].allSatisfy { $0 &- UInt8(ascii: "0") < 10 }
    }

    private func parseDouble(_ range: Range<Int>) -> Double? {
        let text = String(decoding: buffer[range], as: UTF8.self)
        switch text {
        case "inf", "+inf": return .infinity
        case "-inf": return -.infinity
        case "nan", "-nan": return .nan
        default:
            // Digits, a sign, a point and an exponent only: `Double("0x1p3")` or "infinity" are no RESP.
            guard !text.isEmpty, text.utf8.allSatisfy({ "0123456789+-.eE".utf8.contains($0) }) else { return nil }
            return Double(text)
        }
    }

    // MARK: Building

    /// Builds the value at `index` from bytes the scan has validated, and moves past it.
    private func build(at index: inout Int) -> RESPValue {
        let type = buffer[index]
        var end = index + 1
        while !(buffer[end] == 13 && buffer[end + 1] == 10) { end += 1 }
        let line = index + 1..<end
        index = end + 2
        switch type {
        case UInt8(ascii: "+"): return .simpleString(Array(buffer[line]))
        case UInt8(ascii: "-"): return .simpleError(Array(buffer[line]))
        case UInt8(ascii: ":"): return .integer(parseInteger(line)!)
        case UInt8(ascii: "("): return .bigNumber(Array(buffer[line]))
        case UInt8(ascii: ","): return .double(parseDouble(line)!)
        case UInt8(ascii: "#"): return .boolean(buffer[line.lowerBound] == UInt8(ascii: "t"))
        case UInt8(ascii: "_"): return .null
        case UInt8(ascii: "$"), UInt8(ascii: "!"), UInt8(ascii: "="):
            let length = Int(parseInteger(line)!)
            if length == -1 { return .null }
            let body = Array(buffer[index..<index + length])
            index += length + 2
            if type == UInt8(ascii: "$") { return .bulkString(body) }
            if type == UInt8(ascii: "!") { return .blobError(body) }
            return .verbatimString(format: Array(body[0..<3]), text: Array(body[4...]))
        default:
            let count = Int(parseInteger(line)!)
            if count == -1 { return .null }
            if type == UInt8(ascii: "%") || type == UInt8(ascii: "|") {
                var pairs: [RESPValue.Pair] = []
                pairs.reserveCapacity(count)
                for _ in 0..<count {
                    let key = build(at: &index)
                    pairs.append(RESPValue.Pair(key: key, value: build(at: &index)))
                }
                if type == UInt8(ascii: "%") { return .map(pairs) }
                return .attributed(attributes: pairs, value: build(at: &index))
            }
            var values: [RESPValue] = []
            values.reserveCapacity(count)
            for _ in 0..<count { values.append(build(at: &index)) }
            if type == UInt8(ascii: "~") { return .set(values) }
            if type == UInt8(ascii: ">") { return .push(values) }
            return .array(values)
        }
    }
}
