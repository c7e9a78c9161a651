/// One log entry: `item` is assigned `seq`, proposed by the leader of `term`.
///
/// Raft's log index is the seq. Only `(seq, item)` is group-visible once committed; `term`
/// is election metadata used for the log consistency checks.
public struct SequencerEntry<Item: Hashable & Sendable>: Sendable, Hashable {
    /// The position in the group's committed order (`> base`).
    public var seq: UInt64
    /// What the seq names, e.g. a receipt CID.
    public var item: Item
    /// The term of the leader that created the entry.
    public var term: UInt64

    /// Creates an entry.
    public init(seq: UInt64, item: Item, term: UInt64) {
        self.seq = seq
        self.item = item
        self.term = term
    }
}

extension SequencerEntry: Codable where Item: Codable {}
