#if os(Linux)
    import Glibc

    /// The Linux calls Swift's Glibc module does not expose: epoll, eventfd, and the GNU extensions `accept4`
    /// and `pthread_setname_np`.
    ///
    /// `<sys/epoll.h>` and `<sys/eventfd.h>` are not in the module and the GNU extensions need `_GNU_SOURCE`;
    /// the transport uses no C target, so the C entry points are looked up once with `dlsym` and called through C
    /// function pointers (`@convention(c)`, the real C calling convention). The constants and the `struct epoll_event`
    /// layout are the Linux ABI: `EPOLL_CLOEXEC`/`EFD_CLOEXEC` equal `O_CLOEXEC`, `EFD_NONBLOCK` equals
    /// `O_NONBLOCK`, and `struct epoll_event` is packed (12 bytes) on x86_64 and naturally aligned (16 bytes)
    /// elsewhere.
    enum LinuxSystem {
        static let controlAdd: Int32 = 1
        static let controlDelete: Int32 = 2
        static let controlModify: Int32 = 3

        static let eventIn: UInt32 = 0x001
        static let eventOut: UInt32 = 0x004
        static let eventError: UInt32 = 0x008
        static let eventHangUp: UInt32 = 0x010

        static let closeOnExec = Int32(O_CLOEXEC)
        static let nonBlocking = Int32(O_NONBLOCK)

        #if arch(x86_64)
            /// `sizeof(struct epoll_event)`.
            static let eventSize = 12
            /// `offsetof(struct epoll_event, data)`.
            static let dataOffset = 4
        #else
            /// `sizeof(struct epoll_event)`.
            static let eventSize = 16
            /// `offsetof(struct epoll_event, data)`.
            static let dataOffset = 8
        #endif

        private typealias CreateFunction = @convention(c) (Int32) -> Int32
        private typealias ControlFunction = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
        private typealias WaitFunction = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32
        private typealias EventFDFunction = @convention(c) (UInt32, Int32) -> Int32
        private typealias Accept4Function =
            @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32
        private typealias SetThreadNameFunction = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32

        private struct Functions: @unchecked Sendable {
            let create: CreateFunction
            let control: ControlFunction
            let wait: WaitFunction
            let eventFD: EventFDFunction
            let accept4: Accept4Function
            let setThreadName: SetThreadNameFunction

            init() {
                guard let process = dlopen(nil, RTLD_NOW) else {
                    fatalError("LongLink: dlopen(NULL) failed")
                }
                func symbol<Function>(_ name: String, as type: Function.Type) -> Function {
                    guard let pointer = dlsym(process, name) else {
                        fatalError("LongLink: the C library has no \(name)")
                    }
                    return unsafeBitCast(pointer, to: type)
                }
                create = symbol("epoll_create1", as: CreateFunction.self)
                control = symbol("epoll_ctl", as: ControlFunction.self)
                wait = symbol("epoll_wait", as: WaitFunction.self)
                eventFD = symbol("eventfd", as: EventFDFunction.self)
                accept4 = symbol("accept4", as: Accept4Function.self)
                setThreadName = symbol("pthread_setname_np", as: SetThreadNameFunction.self)
            }
        }

        private static let functions = Functions()

        /// `epoll_create1(flags)`.
        static func create(flags: Int32) -> Int32 {
            functions.create(flags)
        }

        /// `epoll_ctl` with an event of `events` carrying `data`.
        static func control(_ epollFD: Int32, _ operation: Int32, _ fd: Int32, events: UInt32, data: UInt64) -> Int32 {
            withUnsafeTemporaryAllocation(byteCount: eventSize, alignment: 8) { event in
                event.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
                event.storeBytes(of: data, toByteOffset: dataOffset, as: UInt64.self)
                return functions.control(epollFD, operation, fd, event.baseAddress)
            }
        }

        /// `epoll_wait` into `events`, which holds `capacity` events of ``eventSize`` bytes.
        static func wait(_ epollFD: Int32, _ events: UnsafeMutableRawPointer, capacity: Int32, timeout: Int32) -> Int32
        {
            functions.wait(epollFD, events, capacity, timeout)
        }

        /// `eventfd(initial, flags)`.
        static func eventFD(initial: UInt32, flags: Int32) -> Int32 {
            functions.eventFD(initial, flags)
        }

        /// `accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)`.
        static func acceptNonBlocking(_ fd: Int32) -> Int32 {
            functions.accept4(fd, nil, nil, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
        }

        /// Names the calling thread (at most 15 bytes are kept).
        static func setCurrentThreadName(_ name: String) {
            _ = functions.setThreadName(pthread_self(), String(decoding: name.utf8.prefix(15), as: UTF8.self))
        }

        /// The `events` and `data` of event `index` in a buffer `wait` filled.
        static func event(_ events: UnsafeMutableRawPointer, at index: Int) -> (events: UInt32, data: UInt64) {
            let base = events + index * eventSize
            return (
                base.loadUnaligned(as: UInt32.self),
                base.loadUnaligned(fromByteOffset: dataOffset, as: UInt64.self)
            )
        }
    }
#endif
