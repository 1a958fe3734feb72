import LongLinkTestSupport
import Testing

@testable import LongLink

/// The service set's bookkeeping, driven directly: no client here ever runs.
@Suite("Service table", .sharedMachine)
struct ServiceTableTests {
    private func client() -> LongLinkClient {
        LongLinkClient(configuration: .init(endpoints: [.tcp(host: "x", port: 1)]))
    }

    @Test func addsAreLaunchedOnceAndRefusedWhenTakenOrShutDown() throws {
        var table = ServiceTable(["a": client()])
        #expect(try table.add("b", client()) == false)
        #expect(table.start() && !table.start())
        #expect(Set(table.takeUnlaunched().map(\.name)) == ["a", "b"])
        #expect(table.takeUnlaunched().isEmpty)
        #expect(try table.add("c", client()) == true)
        #expect(table.takeUnlaunched().map(\.name) == ["c"])
        do {
            _ = try table.add("c", client())
            Issue.record("expected alreadyExists")
        } catch {
            #expect(error.code == .alreadyExists)
        }
        #expect(table.requestShutdown().count == 3)
        do {
            _ = try table.add("d", client())
            Issue.record("expected shutdown")
        } catch {
            #expect(error.code == .shutdown)
        }
    }

    @Test func aRemovalWaitsOnlyForAClientThatRunsOrWillRun() async throws {
        var table = ServiceTable(["a": client(), "b": client()])
        guard case .shutDown = try table.remove("a") else { throw Failure("nothing runs before run()") }
        #expect(throws: LongLinkError.self) { try table.remove("a") }
        _ = table.start()
        #expect(try table.add("a", client()) == true)
        // Removed before `run()` took it: it is still launched, so that its client's run() ends it.
        guard case .shutDownAndWait(_, let id) = try table.remove("a") else { throw Failure("a will run") }
        #expect(table.leavingCount == 1)
        #expect(Set(table.takeUnlaunched().map(\.id)).contains(id))
        // One waiter is cancelled before it waits, one while it waits, one waits to the end.
        let (early, late, patient) = (table.makeWaiterID(), table.makeWaiterID(), table.makeWaiterID())
        #expect(table.cancelWait(for: id, waiter: early) == nil)
        await withCheckedContinuation { waiter in
            let waiting = table.wait(for: id, waiter: early, waiter)
            #expect(!waiting)
            // Resumed either way, so that a failure here does not hang the test.
            if waiting { table.cancelWait(for: id, waiter: early)?.resume() } else { waiter.resume() }
        }
        await withCheckedContinuation { waiter in
            let waiting = table.wait(for: id, waiter: late, waiter)
            #expect(waiting)
            table.cancelWait(for: id, waiter: late)?.resume()
        }
        await withCheckedContinuation { waiter in
            let waiting = table.wait(for: id, waiter: patient, waiter)
            #expect(waiting)
            let waiters = table.finished(id: id, error: nil)
            #expect(waiters.count == 1)
            for waiter in waiters { waiter.resume() }
        }
        #expect(table.leavingCount == 0)
        await withCheckedContinuation { waiter in
            let waiting = table.wait(for: id, waiter: table.makeWaiterID(), waiter)
            #expect(!waiting)
            waiter.resume()
        }
        let b = try #require(table.services["b"])
        _ = table.finished(id: b.id, error: LongLinkError(code: .unauthenticated, message: "no"))
        guard case .shutDown = try table.remove("b") else { throw Failure("b stopped already") }
    }

    @Test func theEndReportsTheFailuresOfTheServicesThatStayed() throws {
        var table = ServiceTable(["b": client(), "a": client(), "c": client()])
        _ = table.start()
        let launches = table.takeUnlaunched()
        for launch in launches where launch.name != "c" {
            _ = table.finished(id: launch.id, error: LongLinkError(code: .unauthenticated, message: "\(launch.name)"))
        }
        _ = try table.remove("a")
        #expect(table.beginDraining().isEmpty)
        #expect(table.end().map(\.0) == ["b"])
    }

    private struct Failure: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }
}
