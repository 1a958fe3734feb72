/// Calls waiting for the link's gate to open, in the order they are to be written.
///
/// A call that ends while it waits (timed out, cancelled) leaves at once: its slot, which the call
/// carries in its stage, is emptied in O(1), and the slots are compacted once the empty ones are
/// half of them (amortised O(1) a call). Before, an ended call stayed in the array until the link
/// came back, so a long offline spell with requests timing out kept every one of them, payloads
/// included, with no bound. Loop only, like the rest of ``ClientCore``'s books.
struct OfflineQueue {
    private var slots: [PendingCall?] = []
    /// The first slot not yet taken by ``popFirst()``.
    private var head = 0
    /// Calls waiting (the slots from `head` that are not empty).
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Slots held, empty ones included (for tests of the compaction).
    var slotCount: Int { slots.count - head }

    /// Puts `call` last; its stage becomes `.queued` with its slot.
    mutating func append(_ call: PendingCall) {
        call.stage = .queued(slot: slots.count)
        slots.append(call)
        count += 1
    }

    /// Puts `calls` first, in their order (calls to resend after a reconnect).
    mutating func prepend(_ calls: [PendingCall]) {
        guard !calls.isEmpty else { return }
        rebuild(from: calls + slots[head...].compactMap { $0 })
    }

    /// Takes the first waiting call out; nil when none waits. Its stage stays `.queued` until the
    /// caller writes it.
    mutating func popFirst() -> PendingCall? {
        while head < slots.count {
            let call = slots[head]
            slots[head] = nil
            head += 1
            if let call {
                count -= 1
                if count == 0 { removeAll() }
                return call
            }
        }
        removeAll()
        return nil
    }

    /// Takes out `call`, which ended while it waited; a call not in the queue is ignored.
    mutating func remove(_ call: PendingCall) {
        guard case .queued(let slot) = call.stage, slot >= head, slot < slots.count, slots[slot] === call else {
            return
        }
        slots[slot] = nil
        count -= 1
        if count == 0 {
            removeAll()
        } else if (slotCount - count) * 2 >= slotCount {
            rebuild(from: slots[head...].compactMap { $0 })
        }
    }

    /// Empties the queue (keeping its storage for the next offline spell).
    mutating func removeAll() {
        slots.removeAll(keepingCapacity: true)
        head = 0
        count = 0
    }

    private mutating func rebuild(from calls: [PendingCall]) {
        removeAll()
        for call in calls { append(call) }
    }
}
