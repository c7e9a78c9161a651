import Synchronization

/// Wakes change streams waiting for the next write of this process. Writes by other processes
/// are found by the streams' own polling.
final class ChangeSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var cancelled: Set<Int> = []
        var nextID = 0
    }

    private let state = Mutex(State())

    var generation: UInt64 { state.withLock { $0.generation } }

    func fire() {
        let waiting = state.withLock { s in
            s.generation += 1
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for w in waiting { w.resume() }
    }

    /// Returns once `fire` was called after `seen` was read, after `timeout`, or on cancellation.
    func wait(after seen: UInt64, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try? await Task.sleep(for: timeout) }
            tasks.addTask { await self.fired(after: seen) }
            await tasks.next()
            tasks.cancelAll()
        }
    }

    private func fired(after seen: UInt64) async {
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
                s.cancelled.insert(id)  // cancelled before it registered
                return nil
            }
            waiter?.resume()
        }
    }
}
