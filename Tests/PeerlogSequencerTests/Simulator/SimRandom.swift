@testable import PeerlogSequencer

extension SequencerRNG {
    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool {
        p > 0 && Double(next() >> 11) / Double(UInt64(1) << 53) < p
    }

    /// A uniformly chosen element, nil when empty.
    mutating func pick<T>(_ values: [T]) -> T? {
        values.isEmpty ? nil : values[int(in: 0...(values.count - 1))]
    }
}
