/// The in-memory log after `base`, with an item index so a leader can refuse to assign an
/// item twice in O(1).
struct SequencerLog<Item: Hashable & Sendable>: Sendable {
    typealias Entry = SequencerEntry<Item>

    let base: UInt64
    private(set) var entries: [Entry] = []
    /// First seq holding each item. Kept robust to duplicates (which correct leaders never
    /// create) so that truncating one copy does not forget the other.
    private var seqByItem: [Item: UInt64] = [:]

    init(base: UInt64) { self.base = base }

    var lastSeq: UInt64 { base + UInt64(entries.count) }
    var lastTerm: UInt64 { entries.last?.term ?? 0 }

    /// Term at `seq`: 0 at `base` (the snapshot), nil outside `base...lastSeq`.
    func term(at seq: UInt64) -> UInt64? {
        if seq == base { return 0 }
        return entry(at: seq)?.term
    }

    func entry(at seq: UInt64) -> Entry? {
        guard seq > base, seq <= lastSeq else { return nil }
        return entries[Int(seq - base - 1)]
    }

    func seq(of item: Item) -> UInt64? { seqByItem[item] }

    /// Entries in `from...through`, clamped to the log.
    func entries(from: UInt64, through: UInt64) -> ArraySlice<Entry> {
        let low = max(from, base + 1)
        let high = min(through, lastSeq)
        guard low <= high else { return [] }
        return entries[Int(low - base - 1)...Int(high - base - 1)]
    }

    mutating func append(_ entry: Entry) {
        precondition(entry.seq == lastSeq + 1, "log append must be contiguous")
        if seqByItem[entry.item] == nil { seqByItem[entry.item] = entry.seq }
        entries.append(entry)
    }

    /// Drops every entry with seq > `seq`.
    mutating func truncate(after seq: UInt64) {
        while let last = entries.last, last.seq > seq {
            if seqByItem[last.item] == last.seq { seqByItem[last.item] = nil }
            entries.removeLast()
        }
    }
}
