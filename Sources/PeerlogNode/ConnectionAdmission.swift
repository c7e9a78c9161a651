import PeerlogChannel
import PeerlogModel
import Synchronization

/// The node-wide bookkeeping behind `NodeLimits`, shared by every connection's handler.
final class ConnectionAdmission: Sendable {
    let limits: NodeLimits
    let reassembly: ReassemblyBudget
    let handshakes: PendingHandshakes
    let identities: IdentityConnections

    init(limits: NodeLimits, fileDescriptorLimit: Int) {
        self.limits = limits
        reassembly = ReassemblyBudget(
            totalBytes: limits.reassemblyBudgetBytes, perIdentityBytes: limits.reassemblyBytesPerIdentity)
        handshakes = PendingHandshakes(
            capacity: limits.pendingHandshakeCapacity(fileDescriptorLimit: fileDescriptorLimit))
        identities = IdentityConnections(limit: limits.maxConnectionsPerIdentity)
    }
}

/// Accepted connections still in their handshake. When full, the oldest is closed to make
/// room: a burst of connections that never handshake then delays a real peer by no more than
/// the time its own handshake takes, instead of locking it out until the burst times out.
final class PendingHandshakes: Sendable {
    let capacity: Int
    /// Connection id → how to close it. Ids grow with time, so the smallest is the oldest.
    private let pending = Mutex<[UInt64: @Sendable () -> Void]>([:])

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { pending.withLock { $0.count } }

    /// Registers a handshake; returns the closers of the oldest ones now beyond capacity
    /// (already forgotten), for the caller to run.
    func begin(_ id: UInt64, close: @escaping @Sendable () -> Void) -> [@Sendable () -> Void] {
        pending.withLock { pending in
            pending[id] = close
            var evicted: [@Sendable () -> Void] = []
            while pending.count > capacity, let oldest = pending.keys.min() {
                evicted.append(pending.removeValue(forKey: oldest)!)
            }
            return evicted
        }
    }

    /// The handshake finished or the connection closed.
    func end(_ id: UInt64) { _ = pending.withLock { $0.removeValue(forKey: id) } }
}

/// Established connections per identity, counted from the handshake to the close.
final class IdentityConnections: Sendable {
    let limit: Int
    private let counts = Mutex<[IdentityID: Int]>([:])

    init(limit: Int) { self.limit = limit }

    /// Counts one more connection of `identity` unless it already has `limit`.
    func admit(_ identity: IdentityID) -> Bool {
        counts.withLock { counts in
            let n = counts[identity] ?? 0
            guard n < limit else { return false }
            counts[identity] = n + 1
            return true
        }
    }

    func release(_ identity: IdentityID) {
        counts.withLock { counts in
            let n = (counts[identity] ?? 0) - 1
            counts[identity] = n > 0 ? n : nil
        }
    }

    func count(_ identity: IdentityID) -> Int { counts.withLock { $0[identity] ?? 0 } }
}
