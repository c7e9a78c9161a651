/// What a voter must keep across crashes (Raft's persistent state): the current term, the
/// vote cast in it, and the log after the configured base.
public struct SequencerPersistentState<Voter: Hashable & Sendable, Item: Hashable & Sendable>: Sendable, Hashable {
    /// Latest term this voter has seen.
    public var currentTerm: UInt64
    /// The candidate voted for in `currentTerm`, if any.
    public var votedFor: Voter?
    /// Entries `base + 1 ... lastSeq`, consecutive, terms non-decreasing.
    public var entries: [SequencerEntry<Item>]

    /// Creates a state; the default is a voter that never ran.
    public init(currentTerm: UInt64 = 0, votedFor: Voter? = nil, entries: [SequencerEntry<Item>] = []) {
        self.currentTerm = currentTerm
        self.votedFor = votedFor
        self.entries = entries
    }

    /// Applies a ``SequencerPersistentChange`` the way a driver's store must.
    public mutating func apply(_ change: SequencerPersistentChange<Voter, Item>) {
        currentTerm = change.currentTerm
        votedFor = change.votedFor
        if let keep = change.truncatedAfter {
            while let last = entries.last, last.seq > keep { entries.removeLast() }
        }
        entries.append(contentsOf: change.appended)
    }
}

extension SequencerPersistentState: Codable where Voter: Codable, Item: Codable {}
