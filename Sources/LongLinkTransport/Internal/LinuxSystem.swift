#if os(Linux)
    import CLinuxSystem
    import Glibc

    /// The Linux calls Swift's Glibc module does not expose (epoll, eventfd, `accept4`, `pthread_setname_np`),
    /// through the `CLinuxSystem` shim, whose C helpers also read and write `struct epoll_event` so that its
    /// per-architecture layout (packed on x86_64) stays in C.
    enum LinuxSystem {
        static let controlAdd = EPOLL_CTL_ADD
        static let controlDelete = EPOLL_CTL_DEL
        static let controlModify = EPOLL_CTL_MOD

        static let eventIn = UInt32(EPOLLIN.rawValue)
        static let eventOut = UInt32(EPOLLOUT.rawValue)
        static let eventError = UInt32(EPOLLERR.rawValue)
        static let eventHangUp = UInt32(EPOLLHUP.rawValue)

        /// `sizeof(struct epoll_event)`.
        static let eventSize = longlink_epoll_event_size()

        /// `epoll_create1(EPOLL_CLOEXEC)`.
        static func create() -> Int32 {
            longlink_epoll_create()
        }

        /// `epoll_ctl` with an event of `events` carrying `data`.
        static func control(_ epollFD: Int32, _ operation: Int32, _ fd: Int32, events: UInt32, data: UInt64) -> Int32 {
            longlink_epoll_ctl(epollFD, operation, fd, events, data)
        }

        /// `epoll_wait` into `events`, which holds `capacity` events of ``eventSize`` bytes.
        static func wait(_ epollFD: Int32, _ events: UnsafeMutableRawPointer, capacity: Int32, timeout: Int32) -> Int32
        {
            longlink_epoll_wait(epollFD, events, capacity, timeout)
        }

        /// `eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)`.
        static func eventFD() -> Int32 {
            longlink_eventfd()
        }

        /// `accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)`.
        static func acceptNonBlocking(_ fd: Int32) -> Int32 {
            longlink_accept(fd, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
        }

        /// Names the calling thread (at most 15 bytes are kept).
        static func setCurrentThreadName(_ name: String) {
            _ = longlink_set_current_thread_name(String(decoding: name.utf8.prefix(15), as: UTF8.self))
        }

        /// The `events` and `data` of event `index` in a buffer `wait` filled.
        static func event(_ events: UnsafeMutableRawPointer, at index: Int) -> (events: UInt32, data: UInt64) {
            (longlink_epoll_event_events(events, Int32(index)), longlink_epoll_event_data(events, Int32(index)))
        }
    }
#endif
