/// One durable update, coalesced per call: overwrite the term and vote, then drop entries
/// with `seq > truncatedAfter` (if set), then append `appended` (which continue the log).
public struct SequencerPersistentChange<Voter: Hashable & Sendable, Item: Hashable & Sendable>: Sendable, Hashable {
    /// The new current term (always present, even if unchanged).
    public var currentTerm: UInt64
    /// The new vote (always present, even if unchanged).
    public var votedFor: Voter?
    /// If set, delete every stored entry with a greater seq before appending.
    public var truncatedAfter: UInt64?
    /// Entries to append, in seq order.
    public var appended: [SequencerEntry<Item>]

    /// Creates a change.
    public init(
        currentTerm: UInt64, votedFor: Voter?, truncatedAfter: UInt64? = nil, appended: [SequencerEntry<Item>] = []
    ) {
        self.currentTerm = currentTerm
        self.votedFor = votedFor
        self.truncatedAfter = truncatedAfter
        self.appended = appended
    }
}

extension SequencerPersistentChange: Codable where Voter: Codable, Item: Codable {}
