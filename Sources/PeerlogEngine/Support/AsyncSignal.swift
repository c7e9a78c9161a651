import Synchronization

/// Wakes the tasks waiting for something to happen, without polling: the one signal of the
/// package (change streams, a dialer's stop, the sequence gate's driver). A waiter reads
/// ``generation``, checks its condition, then waits for a `fire` after what it read, so a fire
/// between the check and the wait is never missed. A waiting task also returns when cancelled.
package final class AsyncSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waiters cancelled before they registered.
        var cancelled: Set<Int> = []
        var nextID = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// How many times `fire` was called.
    package var generation: UInt64 { state.withLock { $0.generation } }

    /// True once `fire` was called (for a one-shot signal).
    package var hasFired: Bool { generation > 0 }

    /// Wakes every waiter.
    package func fire() {
        let waiting = state.withLock { s in
            s.generation += 1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for w in waiting { w.resume() }
    }

    /// Returns once `fire` was called after `seen` was read, or on cancellation.
    package func wait(after seen: UInt64) async {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s in
                    if s.generation != seen || s.cancelled.remove(id) != nil { return true }
                    s.waiters[id] = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                if let w = s.waiters.removeValue(forKey: id) { return w }
                s.cancelled.insert(id)
                return nil
            }
            waiter?.resume()
        }
    }

    /// `wait(after:)`, or `timeout`, whichever comes first.
    package func wait(after seen: UInt64, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try? await Task.sleep(for: timeout) }
            tasks.addTask { await self.wait(after: seen) }
            await tasks.next()
            tasks.cancelAll()
        }
    }
}
