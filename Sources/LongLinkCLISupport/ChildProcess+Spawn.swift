import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ChildProcess {
    /// A started child: its pid and the parent's ends of its pipes (standard input, output, error).
    struct Launched {
        var pid: pid_t
        var parentEnds: [Int32?]
    }

    /// The `posix_spawn` call and what it needs: pipes, file actions, attributes, C strings.
    enum Spawn {
        static func launch(
            _ executable: String, arguments: [String], environment: [String: String]?, workingDirectory: String?,
            input: Input, output: Output, error: Output
        ) throws(Failure) -> Launched {
            func failure(_ operation: String, _ code: Int32 = errno) -> Failure {
                Failure(executable: executable, operation: operation, code: code)
            }
            let path = try resolve(executable, environment: environment)
            var parentEnds: [Int32?] = [nil, nil, nil]
            var childEnds: [Int32?] = [nil, nil, nil]
            var launched = false
            defer {
                for case let fd? in childEnds { close(fd) }
                if !launched { for case let fd? in parentEnds { close(fd) } }
            }
            let pipes: [Bool] = [
                { if case .pipe = input { true } else { false } }(),
                { if case .pipe = output { true } else { false } }(),
                { if case .pipe = error { true } else { false } }(),
            ]
            for (target, wanted) in pipes.enumerated() where wanted {
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else { throw failure("pipe") }
                // Close-on-exec on both ends: the child gets its end through a dup2, which clears the flag.
                for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                // The child reads its standard input from the pipe's read end and writes the others.
                childEnds[target] = target == 0 ? ends[0] : ends[1]
                parentEnds[target] = target == 0 ? ends[1] : ends[0]
            }

            #if canImport(Darwin)
                var actions: posix_spawn_file_actions_t? = nil
            #else
                var actions = posix_spawn_file_actions_t()
            #endif
            guard posix_spawn_file_actions_init(&actions) == 0 else { throw failure("posix_spawn_file_actions_init") }
            defer { posix_spawn_file_actions_destroy(&actions) }
            let modes: [Output] = [
                { if case .nullDevice = input { .nullDevice } else { .inherit } }(), output, error,
            ]
            for target in 0..<3 {
                let fd = Int32(target)
                var result: Int32 = 0
                if let childEnd = childEnds[target] {
                    result = posix_spawn_file_actions_adddup2(&actions, childEnd, fd)
                } else {
                    switch modes[target] {
                    case .inherit:
                        #if canImport(Darwin)
                            result = posix_spawn_file_actions_addinherit_np(&actions, fd)
                        #endif
                    case .nullDevice:
                        result = posix_spawn_file_actions_addopen(
                            &actions, fd, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
                    case .file(let file):
                        result = posix_spawn_file_actions_addopen(
                            &actions, fd, file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                    case .pipe:
                        break
                    }
                }
                guard result == 0 else { throw failure("the file actions for descriptor \(target)", result) }
            }
            if let workingDirectory {
                let result = addChangeDirectory(&actions, workingDirectory)
                guard result == 0 else { throw failure("posix_spawn_file_actions_addchdir_np", result) }
            }
            #if !canImport(Darwin)
                // After the dup2s, which put the pipes on 0, 1 and 2 (Darwin: POSIX_SPAWN_CLOEXEC_DEFAULT below).
                let closed = closeFrom(&actions, 3)
                guard closed == 0 else { throw failure("posix_spawn_file_actions_addclosefrom_np", closed) }
            #endif

            #if canImport(Darwin)
                var attributes: posix_spawnattr_t? = nil
                let flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_CLOEXEC_DEFAULT
            #else
                var attributes = posix_spawnattr_t()
                let flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
            #endif
            guard posix_spawnattr_init(&attributes) == 0 else { throw failure("posix_spawnattr_init") }
            defer { posix_spawnattr_destroy(&attributes) }
            // The tool ignores SIGINT and SIGTERM (its signal watcher) and a test runner may block
            // some: the child starts with none blocked and every one at its default action.
            var noSignals = sigset_t()
            sigemptyset(&noSignals)
            var allSignals = sigset_t()
            sigfillset(&allSignals)
            posix_spawnattr_setsigmask(&attributes, &noSignals)
            posix_spawnattr_setsigdefault(&attributes, &allSignals)
            posix_spawnattr_setflags(&attributes, Int16(flags))

            let argv = CStrings([path] + arguments)
            defer { argv.free() }
            let environmentStrings = environment.map { CStrings($0.map { "\($0.key)=\($0.value)" }) }
            defer { environmentStrings?.free() }
            var pid: pid_t = 0
            let result =
                if let environmentStrings {
                    posix_spawn(&pid, path, &actions, &attributes, argv.pointers, environmentStrings.pointers)
                } else {
                    posix_spawn(&pid, path, &actions, &attributes, argv.pointers, parentEnvironment())
                }
            guard result == 0 else { throw failure("posix_spawn", result) }
            launched = true
            return Launched(pid: pid, parentEnds: parentEnds)
        }

        /// `executable` when it holds a slash, else the first executable of that name on the PATH.
        static func resolve(_ executable: String, environment: [String: String]?) throws(Failure) -> String {
            if executable.contains("/") { return executable }
            let search = (environment ?? ProcessInfo.processInfo.environment)["PATH"] ?? "/usr/bin:/bin"
            for directory in search.split(separator: ":") where !directory.isEmpty {
                let candidate = "\(directory)/\(executable)"
                if access(candidate, X_OK) == 0 { return candidate }
            }
            throw Failure(executable: executable, operation: "the search of the PATH (\(search))", code: ENOENT)
        }

        private static func parentEnvironment() -> UnsafePointer<UnsafeMutablePointer<CChar>?> {
            #if canImport(Darwin)
                UnsafePointer(_NSGetEnviron().pointee!)
            #else
                UnsafePointer(environ)
            #endif
        }

        #if canImport(Darwin)
            private static func addChangeDirectory(
                _ actions: UnsafeMutablePointer<posix_spawn_file_actions_t?>, _ directory: String
            ) -> Int32 {
                posix_spawn_file_actions_addchdir_np(actions, directory)
            }
        #else
            private typealias ActionsPointer = UnsafeMutablePointer<posix_spawn_file_actions_t>
            private typealias CloseFromFunction = @convention(c) (ActionsPointer, Int32) -> Int32
            private typealias ChangeDirectoryFunction = @convention(c) (ActionsPointer, UnsafePointer<CChar>) -> Int32

            /// glibc (2.34 and later) declares `posix_spawn_file_actions_addclosefrom_np` only under
            /// `_GNU_SOURCE`, which Swift's Glibc module is not built with, so it is looked up by name.
            /// The benchmarks compile this module in a package of their own, where the main package's C
            /// shims cannot be reached.
            private static func closeFrom(_ actions: ActionsPointer, _ lowest: Int32) -> Int32 {
                guard let symbol = libcSymbol("posix_spawn_file_actions_addclosefrom_np") else { return ENOSYS }
                return unsafeBitCast(symbol, to: CloseFromFunction.self)(actions, lowest)
            }

            /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29), under `_GNU_SOURCE` too.
            private static func addChangeDirectory(_ actions: ActionsPointer, _ directory: String) -> Int32 {
                guard let symbol = libcSymbol("posix_spawn_file_actions_addchdir_np") else { return ENOSYS }
                return directory.withCString { unsafeBitCast(symbol, to: ChangeDirectoryFunction.self)(actions, $0) }
            }

            private static func libcSymbol(_ name: String) -> UnsafeMutableRawPointer? {
                guard let program = dlopen(nil, RTLD_NOW) else { return nil }
                defer { dlclose(program) }
                return dlsym(program, name)
            }
        #endif
    }

    /// A null-terminated array of C strings, as `argv` and `envp` are, freed by ``free()``.
    struct CStrings {
        let pointers: [UnsafeMutablePointer<CChar>?]

        init(_ strings: [String]) {
            pointers = strings.map { strdup($0) } + [nil]
        }

        func free() {
            for case let pointer? in pointers { Foundation.free(pointer) }
        }
    }
}
