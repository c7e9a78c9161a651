import PeerlogModel

/// Devices whose session ended because they sent receipts that fail verification
/// (`SyncLimits.maxInvalidItems`, docs/PROTOCOL.md §15.3): refused at the handshake for a while,
/// 30 s after the first strike, doubling with each one to 10 min, so a forger that reconnects at
/// once costs a handshake, not a store of evidence. Strikes are kept while the node runs.
struct PeerPenalties: Sendable {
    /// The first refusal's length and the longest, in ms.
    static let firstMs: UInt64 = 30_000
    static let longestMs: UInt64 = 600_000
    /// Devices remembered; past it the oldest refusal goes (an attacker with many device keys
    /// still costs each one a handshake and a session).
    static let capacity = 4_096

    private(set) var entries: [DeviceID: (until: UInt64, strikes: Int)] = [:]

    /// One more strike against `device`; returns how long it is refused from `now` (ms).
    mutating func strike(_ device: DeviceID, now: UInt64) -> UInt64 {
        let strikes = (entries[device]?.strikes ?? 0) + 1
        let ms = min(Self.longestMs, Self.firstMs << UInt64(min(strikes - 1, 20)))
        entries[device] = (now + ms, strikes)
        if entries.count > Self.capacity, let oldest = entries.min(by: { $0.value.until < $1.value.until })?.key {
            entries[oldest] = nil
        }
        return ms
    }

    /// Why `device` is refused at `now`, or nil.
    func refusal(of device: DeviceID, now: UInt64) -> String? {
        guard let e = entries[device], now < e.until else { return nil }
        return
            "device \(device) sent receipts that fail verification; refused for \((e.until - now + 999) / 1000) s more"
    }
}
