import PeerlogModel

/// Term ranges of elected authorities (docs/PROTOCOL.md §18.2). Each elected authority starts
/// at a base seq B (the seq of the `group.sequencer_changed` that set it) and uses terms from
/// `floor(B)` = B · 2^20 up: an authority set later (B' > B) uses terms no earlier one could
/// have used, so an envelope from a voter still running an old election can never pass for
/// one of the current authority.
public enum ElectedTerms {
    /// How many bits of a term number belong to one authority: each authority has 2^20 terms.
    public static let bitsPerAuthority = 20
    /// The first term of the authority set at base seq `base`: `base` · 2^20. Bits shifted out
    /// are lost, so callers keep `base` at most `maxBase`.
    public static func floor(base: UInt64) -> UInt64 { base << UInt64(bitsPerAuthority) }
    /// Bases above this would overflow the term range.
    public static let maxBase: UInt64 = UInt64.max >> UInt64(bitsPerAuthority + 1)
}

/// A group's current elected authority, as the committed state sets it.
public struct ElectedAuthority: Hashable, Sendable {
    /// The group it sequences.
    public let group: GroupID
    /// The devices that vote, sorted ascending by bytes, 1...`GroupLimits.maxVoters` of them.
    public let voters: [DeviceID]
    /// The seq of the change that set it; the authority sequences from `base + 1`.
    public let base: UInt64
    /// The first term this authority may use: `ElectedTerms.floor(base: base)`.
    public var termFloor: UInt64 { ElectedTerms.floor(base: base) }
}
