/// A hybrid logical clock timestamp: 48 bits of wall-clock milliseconds and a 16-bit
/// logical counter, packed as `physical << 16 | logical` (one CBOR unsigned integer).
/// Used for UX and for the tentative order only, never for authority.
public struct HLCTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Largest physical part: 2^48 − 1 ms after the epoch (in the year 10889).
    public static let maxPhysical: UInt64 = (1 << 48) - 1
    /// Wall-clock milliseconds since the Unix epoch, at most `maxPhysical`.
    public let physical: UInt64
    /// Orders events within one millisecond.
    public let logical: UInt16

    /// A timestamp from its parts. Traps when `physical` exceeds `maxPhysical`.
    public init(physical: UInt64, logical: UInt16) {
        precondition(physical <= Self.maxPhysical, "HLC physical time exceeds 48 bits")
        self.physical = physical
        self.logical = logical
    }

    /// Unpacks `physical << 16 | logical` (docs/PROTOCOL.md §5); every value is valid.
    public init(packed: UInt64) {
        self.init(physical: packed >> 16, logical: UInt16(truncatingIfNeeded: packed))
    }

    /// `physical << 16 | logical`: a receipt's `hlc` field and the sort key (docs/PROTOCOL.md §3.2,
    /// §5).
    public var packed: UInt64 { physical << 16 | UInt64(logical) }
    /// Orders by `packed`: physical time, then logical.
    public static func < (l: HLCTimestamp, r: HLCTimestamp) -> Bool { l.packed < r.packed }
    /// `physical.logical`, e.g. `1700000000123.0`.
    public var description: String { "\(physical).\(logical)" }
}

/// The clock itself (Kulkarni et al., "Logical Physical Clocks"). Pure: wall time comes in as
/// an argument. Timestamps from peers more than `maxForwardDrift` ahead of our wall clock are
/// not adopted, so one bad clock cannot drag every replica into the future.
public struct HybridLogicalClock: Sendable {
    /// How far ahead of local wall time a remote timestamp may pull this clock (1 hour).
    public static let maxForwardDrift: UInt64 = 3_600_000
    /// The latest timestamp issued or adopted; the next `now(wallMillis:)` is later.
    public private(set) var last: HLCTimestamp

    /// A clock that continues after `last` (restored from storage), or starts at zero.
    public init(last: HLCTimestamp = HLCTimestamp(physical: 0, logical: 0)) { self.last = last }

    /// A timestamp for a local event at wall time `wallMillis`; strictly greater than any before.
    public mutating func now(wallMillis: UInt64) -> HLCTimestamp {
        let wall = min(wallMillis, HLCTimestamp.maxPhysical)
        last = wall > last.physical ? HLCTimestamp(physical: wall, logical: 0) : increment(last)
        return last
    }

    /// Merges a timestamp seen on a received receipt.
    public mutating func observe(_ remote: HLCTimestamp, wallMillis: UInt64) {
        guard remote.physical <= wallMillis &+ Self.maxForwardDrift, remote > last else { return }
        last = remote
    }

    /// Logical overflow moves to the next millisecond instead of wrapping.
    private func increment(_ t: HLCTimestamp) -> HLCTimestamp {
        t.logical == .max
            ? HLCTimestamp(physical: min(t.physical + 1, HLCTimestamp.maxPhysical), logical: 0)
            : HLCTimestamp(physical: t.physical, logical: t.logical + 1)
    }
}
