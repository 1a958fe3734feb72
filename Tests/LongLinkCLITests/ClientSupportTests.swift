import LongLink
import LongLinkCLISupport
import LongLinkWire
import LongLinkTestSupport
import Testing

@testable import longlink

@Suite("Client command helpers", .sharedMachine)
struct ClientSupportTests {
    @Test func pushLines() {
        #expect(
            ClientSupport.line(for: Push(seq: 7, topic: "alerts", payload: Array(#"{"id":1}"#.utf8)))
                == "7\talerts\t{\"id\":1}")
        #expect(ClientSupport.line(for: Push(seq: 0, topic: "quotes", payload: [])) == "0\tquotes\t")
        // Tabs, newlines, other controls and invalid UTF-8 would break the line: base64 instead.
        #expect(ClientSupport.field(Array("a\tb".utf8)) == "base64:YQli")
        #expect(ClientSupport.field(Array("line\n".utf8)) == "base64:bGluZQo=")
        #expect(ClientSupport.field([0xFF, 0x00]) == "base64:/wA=")
        #expect(ClientSupport.field(Array("é 😀".utf8)) == "é 😀")
        // Text that looks like the marker is encoded too, so every field reads back one way.
        #expect(ClientSupport.field(Array("base64:x".utf8)) == "base64:YmFzZTY0Ong=")
    }

    @Test func calls() throws {
        #expect(try ClientSupport.call("login=alice", option: "login") == ("login", Array("alice".utf8)))
        #expect(try ClientSupport.call("q=a=b", option: "login") == ("q", Array("a=b".utf8)))
        #expect(try ClientSupport.call("ping=", option: "login") == ("ping", []))
        #expect(throws: UsageError.self) { try ClientSupport.call("alice", option: "login") }
        #expect(throws: UsageError.self) { try ClientSupport.call("=alice", option: "login") }
    }

    @Test func errorLines() {
        let remote = LongLinkError(status: Frame.Status(code: .notFound, message: "nope"))
        #expect(ClientSupport.describe(remote) == "NOT_FOUND: nope")
        let deadline = LongLinkError(code: .deadlineExceeded, message: "no reply")
        #expect(ClientSupport.describe(deadline) == "DEADLINE_EXCEEDED: no reply")
        let lost = LongLinkError(code: .connectionLost, message: "dropped")
        #expect(ClientSupport.describe(lost) == "UNAVAILABLE: connectionLost: dropped")
        #expect(ClientSupport.describe(CancellationError()) == "CANCELLED: cancelled")
    }

    /// A server's text (an error status, a `GoAway` reason) keeps its meaning but loses its power
    /// over the terminal.
    @Test func serverTextIsEscaped() {
        #expect(Terminal.escaped("plain é 😀 \\ text") == "plain é 😀 \\ text")
        #expect(Terminal.escaped("\u{1B}[2J") == "\\x1B[2J")
        #expect(Terminal.escaped("a\nb\tc\u{0}\u{7F}\u{9B}") == "a\\x0Ab\\x09c\\x00\\x7F\\x9B")
        #expect(Terminal.escaped("\u{202E}txt.exe") == "\\u{202E}txt.exe")
        let goAway = LongLinkError(
            status: Frame.Status(code: .unauthenticated, message: "logged in elsewhere\u{1B}]0;pwned\u{7}"))
        #expect(ClientSupport.describe(goAway) == "UNAUTHENTICATED: logged in elsewhere\\x1B]0;pwned\\x07")
    }
}
