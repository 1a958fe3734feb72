import LongLinkCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Readiness, used both for what a descriptor is interested in (`readable`, `writable`) and for what the
/// selector reports (plus `hangup` and `error`, which are always reported).
struct IOEvents: OptionSet, Sendable {
    let rawValue: UInt8
    static let readable = IOEvents(rawValue: 1)
    static let writable = IOEvents(rawValue: 2)
    static let hangup = IOEvents(rawValue: 4)
    static let error = IOEvents(rawValue: 8)
}

/// Wakes a selector sleeping in `wait` from any thread.
struct SelectorWaker: Sendable {
    fileprivate let fd: Int32

    func wake() {
        #if os(Linux) && !LONGLINK_PORTABLE_SELECTOR
            var one: UInt64 = 1
            _ = write(fd, &one, MemoryLayout<UInt64>.size)
        #else
            var byte: UInt8 = 0
            _ = write(fd, &byte, 1)
        #endif
    }
}

// Linux uses epoll unless built with `-Xswiftc -DLONGLINK_PORTABLE_SELECTOR`, which selects the poll loop
// Darwin runs, so that CI compiles and tests it on Linux too.
#if os(Linux) && !LONGLINK_PORTABLE_SELECTOR

    /// Level-triggered epoll plus an eventfd for wake-ups. Loop thread only (except ``waker``).
    final class Selector {
        private let epollFD: Int32
        private let eventFD: Int32
        private let capacity = 256
        private let events: UnsafeMutableRawPointer
        private var closed = false

        /// Wakes ``wait(timeoutMilliseconds:)`` from any thread.
        let waker: SelectorWaker

        /// The id `wait` never reports: the wake-up descriptor's.
        private static let wakeID = UInt64.max

        init() throws(LongLinkError) {
            let epollFD = LinuxSystem.create()
            guard epollFD >= 0 else {
                throw LongLinkError.system(errno: errno, function: "epoll_create1")
            }
            let eventFD = LinuxSystem.eventFD()
            guard eventFD >= 0 else {
                let code = errno
                Sys.close(epollFD)
                throw LongLinkError.system(errno: code, function: "eventfd")
            }
            guard
                LinuxSystem.control(
                    epollFD, LinuxSystem.controlAdd, eventFD, events: LinuxSystem.eventIn, data: Self.wakeID)
                    == 0
            else {
                let code = errno
                Sys.close(eventFD)
                Sys.close(epollFD)
                throw LongLinkError.system(errno: code, function: "epoll_ctl")
            }
            self.epollFD = epollFD
            self.eventFD = eventFD
            self.waker = SelectorWaker(fd: eventFD)
            self.events = .allocate(byteCount: capacity * LinuxSystem.eventSize, alignment: 8)
        }

        deinit {
            close()
            // The wake-up descriptor outlives `close()`: other threads may still call `waker.wake()` while they
            // hold the loop, and the loop owns this selector. Closing it earlier could let a late wake-up write
            // into a reused descriptor number.
            Sys.close(eventFD)
            events.deallocate()
        }

        func add(fd: Int32, id: UInt64, interest: IOEvents) throws(LongLinkError) {
            try control(LinuxSystem.controlAdd, fd: fd, id: id, interest: interest)
        }

        func modify(fd: Int32, id: UInt64, interest: IOEvents) throws(LongLinkError) {
            try control(LinuxSystem.controlModify, fd: fd, id: id, interest: interest)
        }

        /// Stops watching `fd`. Call before closing it.
        func remove(fd: Int32) {
            _ = LinuxSystem.control(epollFD, LinuxSystem.controlDelete, fd, events: 0, data: 0)
        }

        /// Waits up to `timeoutMilliseconds` (-1: forever) and returns how many events ``event(at:)`` holds.
        /// Wake-ups are consumed by ``event(at:)`` and not reported.
        func wait(timeoutMilliseconds: Int32) -> Int {
            let count = LinuxSystem.wait(epollFD, events, capacity: Int32(capacity), timeout: timeoutMilliseconds)
            // -1 is EINTR (EBADF and EINVAL cannot happen on a live epoll descriptor): like a timeout.
            return count > 0 ? Int(count) : 0
        }

        /// The event at `index` of the last `wait`; `nil` for the (consumed) wake-up.
        func event(at index: Int) -> (id: UInt64, events: IOEvents)? {
            let (mask, id) = LinuxSystem.event(events, at: index)
            if id == Self.wakeID {
                var value: UInt64 = 0
                _ = read(eventFD, &value, MemoryLayout<UInt64>.size)
                return nil
            }
            var result: IOEvents = []
            if mask & LinuxSystem.eventIn != 0 {
                result.insert(.readable)
            }
            if mask & LinuxSystem.eventOut != 0 {
                result.insert(.writable)
            }
            if mask & LinuxSystem.eventHangUp != 0 {
                result.insert(.hangup)
            }
            if mask & LinuxSystem.eventError != 0 {
                result.insert(.error)
            }
            return (id, result)
        }

        /// Releases the epoll descriptor. The wake-up descriptor stays open until deinit.
        func close() {
            guard !closed else {
                return
            }
            closed = true
            Sys.close(epollFD)
        }

        private func control(_ operation: Int32, fd: Int32, id: UInt64, interest: IOEvents) throws(LongLinkError) {
            var mask: UInt32 = 0
            if interest.contains(.readable) {
                mask |= LinuxSystem.eventIn
            }
            if interest.contains(.writable) {
                mask |= LinuxSystem.eventOut
            }
            guard LinuxSystem.control(epollFD, operation, fd, events: mask, data: id) == 0 else {
                throw LongLinkError.system(errno: errno, function: "epoll_ctl")
            }
        }
    }

#else

    /// `poll(2)` plus a self-pipe for wake-ups: the portable path for Darwin (and Linux built with
    /// `LONGLINK_PORTABLE_SELECTOR`). Loop thread only (except
    /// ``waker``). O(descriptors) per wait, which is fine for a client's handful of connections.
    final class Selector {
        private let wakeReadFD: Int32
        private let wakeWriteFD: Int32
        private var registered: [Int32: (id: UInt64, interest: IOEvents)] = [:]
        private var pollFDs: [pollfd] = []
        private var pollIDs: [UInt64] = []
        private var dirty = true
        private var ready: [(id: UInt64, events: IOEvents)] = []

        /// Wakes ``wait(timeoutMilliseconds:)`` from any thread.
        let waker: SelectorWaker

        init() throws(LongLinkError) {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else {
                throw LongLinkError.system(errno: errno, function: "pipe")
            }
            for fd in fds {
                let flags = fcntl(fd, F_GETFL)
                _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
            wakeReadFD = fds[0]
            wakeWriteFD = fds[1]
            waker = SelectorWaker(fd: fds[1])
        }

        deinit {
            // Both pipe ends live as long as the selector: a late `wake()` must never write into a reused
            // descriptor number, nor into a pipe without a reader (SIGPIPE).
            Sys.close(wakeReadFD)
            Sys.close(wakeWriteFD)
        }

        func add(fd: Int32, id: UInt64, interest: IOEvents) throws(LongLinkError) {
            registered[fd] = (id, interest)
            dirty = true
        }

        func modify(fd: Int32, id: UInt64, interest: IOEvents) throws(LongLinkError) {
            registered[fd] = (id, interest)
            dirty = true
        }

        func remove(fd: Int32) {
            registered[fd] = nil
            dirty = true
        }

        func wait(timeoutMilliseconds: Int32) -> Int {
            if dirty {
                pollFDs.removeAll(keepingCapacity: true)
                pollIDs.removeAll(keepingCapacity: true)
                pollFDs.append(pollfd(fd: wakeReadFD, events: Int16(POLLIN), revents: 0))
                pollIDs.append(UInt64.max)
                for (fd, entry) in registered {
                    var mask: Int16 = 0
                    if entry.interest.contains(.readable) {
                        mask |= Int16(POLLIN)
                    }
                    if entry.interest.contains(.writable) {
                        mask |= Int16(POLLOUT)
                    }
                    pollFDs.append(pollfd(fd: fd, events: mask, revents: 0))
                    pollIDs.append(entry.id)
                }
                dirty = false
            }
            ready.removeAll(keepingCapacity: true)
            let count = poll(&pollFDs, nfds_t(pollFDs.count), timeoutMilliseconds)
            guard count > 0 else {
                return 0
            }
            for index in pollFDs.indices where pollFDs[index].revents != 0 {
                let revents = pollFDs[index].revents
                pollFDs[index].revents = 0
                if index == 0 {
                    var buffer = [UInt8](repeating: 0, count: 64)
                    while read(wakeReadFD, &buffer, buffer.count) > 0 {}
                    continue
                }
                var result: IOEvents = []
                if revents & Int16(POLLIN) != 0 {
                    result.insert(.readable)
                }
                if revents & Int16(POLLOUT) != 0 {
                    result.insert(.writable)
                }
                if revents & Int16(POLLHUP) != 0 {
                    result.insert(.hangup)
                }
                if revents & (Int16(POLLERR) | Int16(POLLNVAL)) != 0 {
                    result.insert(.error)
                }
                ready.append((pollIDs[index], result))
            }
            return ready.count
        }

        func event(at index: Int) -> (id: UInt64, events: IOEvents)? {
            ready[index]
        }

        /// Forgets every registration. The wake-up pipe stays open until deinit.
        func close() {
            registered.removeAll()
            dirty = true
        }
    }

#endif
