import Foundation
import LongLinkCLISupport
import LongLinkTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("ChildProcess: posix_spawn, statuses, pipes, files, inherited descriptors", .sharedMachine)
struct ChildProcessTests {
    @Test func theExitCodeIsTheStatus() throws {
        let child = try ChildProcess("/bin/sh", arguments: ["-c", "exit 3"])
        #expect(child.waitUntilExit() == 3)
        #expect(!child.isRunning)
        #expect(child.terminationStatus == 3)
    }

    @Test func aKilledChildEndsWith128PlusTheSignal() async throws {
        let child = try ChildProcess("/bin/sleep", arguments: ["30"])
        #expect(child.isRunning)
        #expect(child.terminationStatus == nil)
        child.kill()
        #expect(await child.waitForExit(within: .seconds(10)) == 128 + SIGKILL)
        // Reaped: a later signal goes nowhere, the status stays.
        child.terminate()
        #expect(child.terminationStatus == 128 + SIGKILL)
    }

    @Test func terminateSendsSIGTERM() throws {
        let child = try ChildProcess("/bin/sleep", arguments: ["30"])
        child.terminate()
        #expect(child.waitUntilExit(within: .seconds(10)) == 128 + SIGTERM)
    }

    @Test func aBoundedWaitGivesUpOnARunningChild() async throws {
        let child = try ChildProcess("/bin/sleep", arguments: ["30"])
        defer { child.kill() }
        #expect(child.waitUntilExit(within: .milliseconds(50)) == nil)
        #expect(await child.waitForExit(within: .milliseconds(50)) == nil)
        #expect(child.isRunning)
    }

    @Test func everyWaiterSeesTheOneStatus() async throws {
        let child = try ChildProcess("/bin/sh", arguments: ["-c", "sleep 0.2; exit 7"])
        let blocking = Task.detached { child.waitUntilExit() }
        let statuses = await withTaskGroup(of: Int32?.self) { group in
            for _ in 0..<8 {
                group.addTask { await child.waitForExit(within: .seconds(10), pollingEvery: .milliseconds(1)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 7, count: 8))
        #expect(await blocking.value == 7)
    }

    @Test func outputGoesToAFileAndAPipe() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: file) }
        let child = try ChildProcess(
            "/bin/sh", arguments: ["-c", "echo to-the-file; echo to-the-pipe >&2"], standardInput: .nullDevice,
            standardOutput: .file(file.path), standardError: .pipe)
        let piped = child.standardError.map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) }
        #expect(child.waitUntilExit() == 0)
        #expect(piped == "to-the-pipe\n")
        #expect(try String(contentsOf: file, encoding: .utf8) == "to-the-file\n")
        #expect(child.standardOutput == nil && child.standardInput == nil)
    }

    @Test func theStandardInputPipeReachesTheChild() throws {
        let child = try ChildProcess("/bin/cat", standardInput: .pipe, standardOutput: .pipe)
        let writer = try #require(child.standardInput)
        try writer.write(contentsOf: Data("line one\nline two".utf8))
        try writer.close()
        let echoed = child.standardOutput.map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) }
        #expect(echoed == "line one\nline two")
        #expect(child.waitUntilExit() == 0)
    }

    @Test func theEnvironmentTheWorkingDirectoryAndThePATHSearch() throws {
        let child = try ChildProcess(
            "env", environment: ["LONGLINK_CHILD": "yes", "PATH": "/usr/bin:/bin"], workingDirectory: "/",
            standardOutput: .pipe)
        let output = child.standardOutput.map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) }
        #expect(child.waitUntilExit() == 0)
        #expect(output?.split(separator: "\n").sorted() == ["LONGLINK_CHILD=yes", "PATH=/usr/bin:/bin"])
        let pwd = try ChildProcess(
            "/bin/sh", arguments: ["-c", "pwd"], workingDirectory: "/tmp", standardOutput: .pipe)
        #expect(pwd.standardOutput.map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } == "/tmp\n")
        #expect(pwd.waitUntilExit() == 0)
    }

    #if os(Linux)
        // Both read /proc/self of the child.
        /// A descriptor the parent opened without close-on-exec (as a socket a test holds may be)
        /// must not reach the child, which would keep it open after the parent closed it.
        @Test func theChildInheritsNoDescriptorButTheStandardThree() throws {
            let opened = open("/dev/null", O_RDONLY)
            try #require(opened >= 0)
            // High, so that it is none the shell opens for itself.
            let fd = fcntl(opened, F_DUPFD, 400)
            close(opened)
            try #require(fd >= 400)
            defer { close(fd) }
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC == 0)
            let check = try ChildProcess("/bin/sh", arguments: ["-c", "test -e /proc/self/fd/\(fd)"])
            #expect(check.waitUntilExit() == 1, "descriptor \(fd) reached the child")
            // The check itself sees a descriptor that is there.
            let control = try ChildProcess("/bin/sh", arguments: ["-c", "test -e /proc/self/fd/2"])
            #expect(control.waitUntilExit() == 0)
        }

        /// The tool ignores SIGINT and SIGTERM while its signal watcher runs; a child it starts (its
        /// redis-server) must still stop on SIGTERM.
        @Test func theChildStartsWithNoSignalIgnoredOrBlocked() throws {
            // SIGWINCH's default action is to do nothing, so ignoring it for a moment changes nothing here.
            let previous = signal(SIGWINCH, SIG_IGN)
            defer { signal(SIGWINCH, previous) }
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGWINCH)
            var saved = sigset_t()
            pthread_sigmask(SIG_BLOCK, &blocked, &saved)
            defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
            let child = try ChildProcess(
                "grep", arguments: ["-E", "^Sig(Ign|Blk)", "/proc/self/status"], standardOutput: .pipe)
            let output = child.standardOutput.map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } ?? ""
            #expect(child.waitUntilExit() == 0)
            // Bit n - 1 stands for signal n. Only the standard signals, 1 to 31: glibc keeps two
            // real-time signals above them for itself, which posix_spawn leaves as they are.
            let masks = output.split(separator: "\n").compactMap { line in
                UInt64(line.split(separator: "\t").last ?? "", radix: 16).map { $0 & 0x7fff_ffff }
            }
            #expect(masks == [0, 0], "blocked, ignored: \(output)")
        }
    #endif

    @Test func aMissingExecutableIsATypedError() throws {
        let absolute = #expect(throws: ChildProcess.Failure.self) {
            try ChildProcess("/nonexistent/longlink-no-such-tool")
        }
        #expect(absolute?.code == ENOENT)
        #expect(absolute?.description.contains("No such file or directory") == true)
        let searched = #expect(throws: ChildProcess.Failure.self) {
            try ChildProcess("longlink-no-such-tool", environment: ["PATH": "/usr/bin:/bin"])
        }
        #expect(searched?.code == ENOENT)
        #expect(searched?.description.contains("PATH") == true)
    }
}
