import PeerlogEngine
import PeerlogModel

extension Peerlog {
    /// How far this device is from `group`'s offline limits (docs/PROTOCOL.md §10.5): its own
    /// writes waiting for a seq and the oldest one's age, against the limits. A write that would
    /// pass them fails with ``PeerlogError/Code/offlineLimit`` and writes nothing.
    public func offlineHeadroom(of group: GroupID) async throws -> OfflineHeadroom {
        try await call { [self] in
            try requireHeld(group)
            return try replica.offlineHeadroom(of: group)
        }
    }

    /// Sets this device's own offline limits for `group` (never sent to other devices): at most
    /// `maxWaiting` (0 or more) of its writes waiting for a seq, none older than `maxAgeMillis`. nil
    /// keeps the default for that limit (100,000 writes, 30 days); two nils remove the override.
    public func setOfflineLimits(maxWaiting: Int?, maxAgeMillis: UInt64?, of group: GroupID) async throws {
        try await call { [self] in
            try replica.setOfflineLimits(maxWaiting: maxWaiting, maxAgeMillis: maxAgeMillis, of: group)
        }
    }
}
