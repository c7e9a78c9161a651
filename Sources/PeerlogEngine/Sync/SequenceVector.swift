import PeerlogModel

/// What a replica holds of a group: the basis of anti-entropy.
public struct SequenceVector: Hashable, Sendable {
    /// Highest committed seq (contiguous from 1).
    public let committed: UInt64
    /// Per author device, the highest contiguous author counter held, by device id.
    public let authors: [(DeviceID, UInt64)]

    /// Equal when `committed` and every (device, counter) pair, in order, are equal.
    public static func == (l: SequenceVector, r: SequenceVector) -> Bool {
        l.committed == r.committed && l.authors.map(\.0) == r.authors.map(\.0)
            && l.authors.map(\.1) == r.authors.map(\.1)
    }

    /// Hashes `committed` and the pairs in order, consistent with `==`.
    public func hash(into h: inout Hasher) {
        h.combine(committed)
        for (d, c) in authors {
            h.combine(d)
            h.combine(c)
        }
    }
}
