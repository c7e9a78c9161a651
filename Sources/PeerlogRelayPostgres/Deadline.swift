#if PostgreSQL
import Synchronization

/// Runs `body` for at most `limit`: then throws `RelayStoreError` with code `.timeout`, naming
/// `what` and `limitName`, and cancels `body`, which is left to end on its own. A server that
/// stopped answering mid-statement cannot hold the caller: the answer does not wait for `body`
/// to honour the cancellation (a query on a stalled connection may not until the connection
/// closes).
func withDeadline<T: Sendable>(
    _ limit: Duration, _ limitName: String, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let work = Task { try await body() }
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            race.arm(continuation)
            let timer = Task {
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled else { return }
                let late = RelayStoreError(
                    "PostgreSQL: cannot \(what): no answer within \(limit) (\(limitName)); the server is down, unreachable or stalled",
                    code: .timeout)
                if race.finish(.failure(late)) { work.cancel() }
            }
            Task {
                let result = await work.result
                timer.cancel()
                _ = race.finish(result)
            }
        }
    } onCancel: {
        work.cancel()
    }
}

/// The first of the body and the timer resumes the caller; the other finds it done.
private final class DeadlineRace<T: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, result: Result<T, any Error>?)>(
        (nil, nil))

    func arm(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { s -> Result<T, any Error>? in
            guard let r = s.result else {
                s.continuation = continuation
                return nil
            }
            return r
        }
        if let early { continuation.resume(with: early) }
    }

    /// True when this call decided the outcome.
    func finish(_ result: Result<T, any Error>) -> Bool {
        let (decided, waiting) = state.withLock { s -> (Bool, CheckedContinuation<T, any Error>?) in
            guard s.result == nil else { return (false, nil) }
            s.result = result
            defer { s.continuation = nil }
            return (true, s.continuation)
        }
        waiting?.resume(with: result)
        return decided
    }
}
#endif
