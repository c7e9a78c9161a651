/// A small seeded generator (SplitMix64) so that elections replay exactly in tests.
///
/// The sequencer draws only its randomized election timeouts from it.
public struct SequencerRNG: RandomNumberGenerator, Sendable, Hashable {
    private var state: UInt64

    /// Creates a generator; equal seeds give equal sequences.
    public init(seed: UInt64) { state = seed }

    /// Creates a generator for one stream of a seed, so voters sharing a seed still diverge.
    public init(seed: UInt64, stream: UInt64) {
        state = seed ^ ((stream &+ 1) &* 0xD1B5_4A32_D192_ED03)
        _ = next()
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `range`, computed here (not by the standard library) so it is stable
    /// across toolchains. The modulo bias is irrelevant for ranges this small.
    public mutating func int(in range: ClosedRange<Int>) -> Int {
        let width = UInt64(range.upperBound - range.lowerBound) + 1
        return range.lowerBound + Int(next() % width)
    }
}
