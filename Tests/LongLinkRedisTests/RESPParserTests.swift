import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// Every RESP3 type, whole and split at every byte, and hostile bytes.
@Suite(.sharedMachine) struct RESPParserTests {
    static let samples: [(String, [UInt8], RESPValue)] = [
        ("simple string", bytes("+OK\r\n"), .simpleString(bytes("OK"))),
        ("simple error", bytes("-ERR unknown command\r\n"), .simpleError(bytes("ERR unknown command"))),
        ("integer", bytes(":-9223372036854775808\r\n"), .integer(.min)),
        ("bulk string", bytes("$5\r\nh\r\nlo\r\n"), .bulkString(bytes("h\r\nlo"))),
        ("empty bulk string", bytes("$0\r\n\r\n"), .bulkString([])),
        ("null", bytes("_\r\n"), .null),
        ("RESP2 null bulk", bytes("$-1\r\n"), .null),
        ("RESP2 null array", bytes("*-1\r\n"), .null),
        ("double", bytes(",-1.5e3\r\n"), .double(-1500)),
        ("infinity", bytes(",-inf\r\n"), .double(-.infinity)),
        ("boolean", bytes("#f\r\n"), .boolean(false)),
        ("blob error", bytes("!21\r\nSYNTAX invalid syntax\r\n"), .blobError(bytes("SYNTAX invalid syntax"))),
        (
            "verbatim string", bytes("=15\r\ntxt:Some string\r\n"),
            .verbatimString(format: bytes("txt"), text: bytes("Some string"))
        ),
        (
            "big number", bytes("(-3492890328409238509324850943850943825024385\r\n"),
            .bigNumber(bytes("-3492890328409238509324850943850943825024385"))
        ),
        ("array", bytes("*3\r\n:1\r\n$1\r\na\r\n*0\r\n"), .array([.integer(1), .bulkString(bytes("a")), .array([])])),
        (
            "map", bytes("%2\r\n+first\r\n:1\r\n+second\r\n#t\r\n"),
            .map([
                .init(key: .simpleString(bytes("first")), value: .integer(1)),
                .init(key: .simpleString(bytes("second")), value: .boolean(true)),
            ])
        ),
        ("set", bytes("~2\r\n+a\r\n_\r\n"), .set([.simpleString(bytes("a")), .null])),
        (
            "attribute", bytes("|1\r\n+ttl\r\n:3600\r\n*1\r\n:7\r\n"),
            .attributed(
                attributes: [.init(key: .simpleString(bytes("ttl")), value: .integer(3600))],
                value: .array([.integer(7)]))
        ),
        (
            "attribute inside an array", bytes("*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n"),
            .array([
                .attributed(
                    attributes: [.init(key: .simpleString(bytes("k")), value: .simpleString(bytes("v")))],
                    value: .integer(1)),
                .integer(2),
            ])
        ),
        (
            "push", bytes(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\nhi!\r\n"),
            .push([
                .bulkString(bytes("message")), .bulkString(bytes("ch")), .bulkString(bytes("hi!")),
            ])
        ),
        (
            "nested", bytes("*1\r\n%1\r\n~1\r\n:1\r\n*1\r\n,nan\r\n"),
            .array([
                .map([.init(key: .set([.integer(1)]), value: .array([.double(.nan)]))])
            ])
        ),
    ]

    /// NaN is never equal to itself; the nested sample holds one.
    static func same(_ lhs: RESPValue, _ rhs: RESPValue) -> Bool {
        String(describing: lhs) == String(describing: rhs)
    }

    @Test(arguments: 0..<samples.count)
    func everyTypeWholeAndSplitAtEveryByte(_ index: Int) throws {
        let (name, wire, expected) = Self.samples[index]
        for split in 0...wire.count {
            var parser = RESPParser()
            parser.append(Array(wire[..<split]))
            if split < wire.count {
                #expect(try parser.next() == nil, "\(name): complete after \(split) of \(wire.count) bytes")
            }
            parser.append(Array(wire[split...]))
            let value = try #require(try parser.next(), "\(name) split at \(split)")
            #expect(Self.same(value, expected), "\(name) split at \(split): \(value)")
            #expect(try parser.next() == nil)
            #expect(parser.bufferedByteCount == 0)
        }
    }

    @Test func allSamplesInOneStreamByteByByte() throws {
        let stream = Self.samples.flatMap(\.1)
        var parser = RESPParser()
        var values: [RESPValue] = []
        for byte in stream {
            parser.append([byte])
            while let value = try parser.next() { values.append(value) }
        }
        #expect(values.count == Self.samples.count)
        for (value, sample) in zip(values, Self.samples) { #expect(Self.same(value, sample.2), "\(sample.0)") }
    }

    static let hostile: [(String, [UInt8], RESPParseError.Reason)] = [
        ("unknown type", bytes("?x\r\n"), .unknownType(UInt8(ascii: "?"))),
        ("streamed string", bytes("$?\r\n"), .malformedLine),
        ("integer overflow", bytes(":9223372036854775808\r\n"), .malformedLine),
        ("integer with letters", bytes(":12a\r\n"), .malformedLine),
        ("negative bulk length", bytes("$-2\r\n"), .malformedLine),
        ("huge bulk length", bytes("$99999999999\r\n"), .bulkTooLong(99_999_999_999)),
        ("huge array", bytes("*2000000\r\n"), .aggregateTooLarge(2_000_000)),
        ("null map", bytes("%-1\r\n"), .malformedLine),
        ("bulk without CRLF", bytes("$1\r\nab\r\n"), .missingTerminator),
        ("bad boolean", bytes("#x\r\n"), .malformedLine),
        ("bad double", bytes(",0x1p3\r\n"), .malformedLine),
        ("null with text", bytes("_x\r\n"), .malformedLine),
        ("short verbatim", bytes("=3\r\ntxt\r\n"), .malformedLine),
        ("verbatim without colon", bytes("=5\r\ntxt-a\r\n"), .malformedLine),
        ("big number with letters", bytes("(12x\r\n"), .malformedLine),
        ("too deep", Array(repeating: bytes("*1\r\n"), count: 40).flatMap { $0 }, .tooDeep),
        ("line without end", bytes("+") + [UInt8](repeating: UInt8(ascii: "a"), count: 70_000), .lineTooLong),
    ]

    @Test(arguments: 0..<hostile.count)
    func hostileBytesGiveTypedErrors(_ index: Int) {
        let (name, wire, reason) = Self.hostile[index]
        var parser = RESPParser()
        parser.append(wire)
        #expect(throws: RESPParseError.self, "\(name)") {
            while try parser.next() != nil {}
        }
        do {
            while try parser.next() != nil {}
            Issue.record("\(name): no error")
        } catch {
            #expect(error.reason == reason, "\(name): \(error)")
        }
    }

    @Test func limitsAreChecked() throws {
        var limits = RESPParser.Limits()
        limits.maxBulkLength = 4
        limits.maxAggregateCount = 2
        limits.maxDepth = 2
        limits.maxValueBytes = 30
        var parser = RESPParser(limits: limits)
        parser.append(bytes("$4\r\nabcd\r\n*2\r\n*2\r\n:1\r\n:2\r\n:3\r\n"))
        #expect(try parser.next() == .bulkString(bytes("abcd")))
        #expect(try parser.next() == .array([.array([.integer(1), .integer(2)]), .integer(3)]))
        for (wire, reason) in [
            (bytes("$5\r\n"), RESPParseError.Reason.bulkTooLong(5)), (bytes("~3\r\n"), .aggregateTooLarge(3)),
            (bytes("*1\r\n*1\r\n*1\r\n"), .tooDeep),
            (bytes("*2\r\n$4\r\naaaa\r\n*2\r\n$4\r\nbbbb\r\n$4\r\ncccc\r\n"), .valueTooLarge),
        ] {
            var parser = RESPParser(limits: limits)
            parser.append(wire)
            do {
                while try parser.next() != nil {}
                Issue.record("no error for \(reason)")
            } catch {
                #expect(error.reason == reason)
            }
        }
    }

    @Test func errorOffsetsCountFromTheStreamStartAndTheParserStaysFailed() throws {
        var parser = RESPParser()
        parser.append(bytes("+OK\r\n:1\r\n?"))
        #expect(try parser.next() == .simpleString(bytes("OK")))
        #expect(try parser.next() == .integer(1))
        #expect(throws: RESPParseError(reason: .unknownType(UInt8(ascii: "?")), offset: 9)) { try parser.next() }
        parser.append(bytes("+OK\r\n"))
        #expect(throws: RESPParseError.self) { try parser.next() }
    }

    @Test func aBigReplySplitIntoManyReadsIsScannedOnce() throws {
        // 10,000 elements arriving 7 bytes at a time: the scan resumes where it stopped.
        var wire = bytes("*10000\r\n")
        for index in 0..<10_000 { wire += bytes(":\(index)\r\n") }
        var parser = RESPParser()
        var value: RESPValue?
        var offset = 0
        while offset < wire.count {
            parser.append(Array(wire[offset..<min(wire.count, offset + 7)]))
            offset += 7
            if let next = try parser.next() { value = next }
        }
        #expect(value?.elements?.count == 10_000)
        #expect(value?.elements?.last == .integer(9_999))
    }

    @Test func commandsEncodeAsArraysOfBulkStrings() {
        var wire: [UInt8] = []
        RedisCommand([bytes("SET"), bytes("k"), [0, 13, 10]]).encode(into: &wire)
        #expect(wire == bytes("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\n") + [0, 13, 10] + bytes("\r\n"))
    }

    @Test func sha1MatchesKnownDigests() {
        #expect(SHA1.hexDigest([]) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(SHA1.hexDigest(bytes("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            SHA1.hexDigest(bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
                == "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }
}
