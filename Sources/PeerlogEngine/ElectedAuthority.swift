import PeerlogModel

/// Term ranges of elected authorities (docs/PROTOCOL.md §18.2). Each elected authority starts
/// at a base seq B (the seq of the `group.sequencer_changed` that set it) and uses terms from
/// `floor(B)` = B · 2^20 up: an authority set later (B' > B) uses terms no earlier one could
/// have used, so an envelope from a voter still running an old election can never pass for
/// one of the current authority.
public enum ElectedTerms {
    public static let bitsPerAuthority = 20
    public static func floor(base: UInt64) -> UInt64 { base << UInt64(bitsPerAuthority) }
    /// Bases above this would overflow the term range.
    public static let maxBase: UInt64 = UInt64.max >> UInt64(bitsPerAuthority + 1)
}

/// A group's current elected authority, as the committed state sets it.
public struct ElectedAuthority: Hashable, Sendable {
    public let group: GroupID
    public let voters: [DeviceID]
    /// The seq of the change that set it; the authority sequences from `base + 1`.
    public let base: UInt64
    public var termFloor: UInt64 { ElectedTerms.floor(base: base) }
}
