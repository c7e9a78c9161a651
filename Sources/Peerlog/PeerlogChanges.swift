import PeerlogEngine
import PeerlogModel

extension Peerlog {
    /// The changes to `group` (every group when nil) from `cursor` on (from now when nil), as
    /// they are committed to this home's store by any process: this app's own writes, receipts
    /// arriving by sync, the CLI or a daemon on the same home.
    ///
    /// The stream reads the store's change log (docs/PROTOCOL.md §10.4) page by page, so a
    /// slow consumer never makes memory grow: it only falls behind in the log. If it falls
    /// further behind than the log keeps (`ReplicaLimits.changeLogRetention`, 100,000 rows),
    /// it gets one `.gap` and continues from the newest change. The stream ends when the task
    /// iterating it is cancelled.
    public func changes(in group: GroupID? = nil, after cursor: ChangeCursor? = nil) -> PeerlogChanges {
        // "Now" is when this is called, not when iteration starts: a write between the two is seen.
        let now = cursor ?? (try? replica.changeLogBounds().last).map(ChangeCursor.init(rawValue:))
        return PeerlogChanges(peerlog: self, group: group, start: now)
    }

    /// The cursor of the newest change so far: start a stream here to skip history.
    public func latestChangeCursor() async throws -> ChangeCursor {
        try await call { [self] in ChangeCursor(rawValue: try replica.changeLogBounds().last) }
    }
}

/// An `AsyncSequence` of `PeerlogChange`s (see `Peerlog.changes(in:after:)`).
public struct PeerlogChanges: AsyncSequence, Sendable {
    /// Each change, in commit order.
    public typealias Element = PeerlogChange
    /// How often a waiting stream looks for writes by other processes.
    public static let pollInterval: Duration = .milliseconds(200)
    /// Rows read from the store at a time: all the memory a stream holds.
    public static let pageSize = 256

    let peerlog: Peerlog
    let group: GroupID?
    let start: ChangeCursor?

    /// An iterator that starts at the stream's cursor.
    public func makeAsyncIterator() -> Iterator { Iterator(peerlog: peerlog, group: group, cursor: start?.rawValue) }

    /// Reads the change log a page at a time; waits when it is at the end.
    public struct Iterator: AsyncIteratorProtocol {
        let peerlog: Peerlog
        let group: GroupID?
        var cursor: Int64?
        var buffer: [PeerlogChange] = []
        var index = 0

        /// The next change; waits for one. nil once the iterating task is cancelled.
        public mutating func next() async throws -> PeerlogChange? {
            while true {
                if index < buffer.count {
                    defer { index += 1 }
                    return buffer[index]
                }
                if Task.isCancelled { return nil }
                let seen = peerlog.signal.generation
                if try await fill() { continue }
                await peerlog.signal.wait(after: seen, timeout: PeerlogChanges.pollInterval)
            }
        }

        /// Reads the next page after the cursor; false when there is nothing new.
        private mutating func fill() async throws -> Bool {
            let replica = peerlog.replica
            let (first, last) = try await peerlog.call { try replica.changeLogBounds() }
            guard let after = cursor else {
                cursor = last  // no cursor given: from now on
                return false
            }
            buffer = []
            index = 0
            if let first, first > after + 1, last > after {
                // Rows after the cursor were pruned before they were read.
                cursor = last
                buffer = [PeerlogChange(cursor: ChangeCursor(rawValue: last), at: 0, event: .gap)]
                return true
            }
            let group = group
            let rows = try await peerlog.call {
                try replica.changes(after: after, group: group, limit: PeerlogChanges.pageSize)
            }
            guard let newest = rows.last else {
                cursor = Swift.max(after, group == nil ? after : last)  // skip other groups' rows for good
                return false
            }
            cursor = newest.id
            buffer = rows.compactMap(PeerlogChange.init)
            return true
        }
    }
}
