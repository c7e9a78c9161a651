import PeerlogChannel
import PeerlogModel
import Synchronization

/// The node-wide bookkeeping behind `NodeLimits`, shared by every connection's handler.
final class ConnectionAdmission: Sendable {
    let limits: NodeLimits
    let reassembly: ReassemblyBudget
    let handshakes: PendingHandshakes
    let identities: IdentityConnections
    /// Decrypted messages waiting for the hub, in bytes, over all connections.
    let queued: QueuedMessageBytes

    init(limits: NodeLimits, fileDescriptorLimit: Int) {
        self.limits = limits
        reassembly = ReassemblyBudget(
            totalBytes: limits.reassemblyBudgetBytes, perIdentityBytes: limits.reassemblyBytesPerIdentity)
        handshakes = PendingHandshakes(
            capacity: limits.pendingHandshakeCapacity(fileDescriptorLimit: fileDescriptorLimit))
        identities = IdentityConnections(
            limit: limits.maxConnectionsPerIdentity,
            total: limits.connectionCapacity(fileDescriptorLimit: fileDescriptorLimit))
        queued = QueuedMessageBytes(limit: limits.maxQueuedMessageBytes)
    }
}

/// Bytes of decrypted messages handed to the hub and not yet processed, node-wide
/// (`maxQueuedMessageBytes`).
final class QueuedMessageBytes: Sendable {
    let limit: Int
    private let bytes = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    func add(_ n: Int) { bytes.add(n, ordering: .relaxed) }
    func remove(_ n: Int) { bytes.subtract(n, ordering: .relaxed) }
    var total: Int { bytes.load(ordering: .relaxed) }
    var isOver: Bool { total > limit }
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

/// Established connections per identity and in all, counted from the handshake to the close.
final class IdentityConnections: Sendable {
    let limit: Int
    /// Connections of all identities together (`maxConnections`, held to the descriptors).
    let total: Int
    private let counts = Mutex<(perIdentity: [IdentityID: Int], all: Int)>(([:], 0))

    init(limit: Int, total: Int = .max) {
        self.limit = limit
        self.total = total
    }

    /// Counts one more connection of `identity`; nil when admitted, else the close reason
    /// (naming the limit) when it already has `limit` or the node has `total`.
    func admit(_ identity: IdentityID) -> String? {
        counts.withLock { counts in
            let n = counts.perIdentity[identity] ?? 0
            guard n < limit else {
                return "identity \(identity) already has \(limit) connections (maxConnectionsPerIdentity)"
            }
            guard counts.all < total else { return "\(total) connections are open (maxConnections)" }
            counts.perIdentity[identity] = n + 1
            counts.all += 1
            return nil
        }
    }

    func release(_ identity: IdentityID) {
        counts.withLock { counts in
            guard let n = counts.perIdentity[identity] else { return }
            counts.perIdentity[identity] = n > 1 ? n - 1 : nil
            counts.all -= 1
        }
    }

    func count(_ identity: IdentityID) -> Int { counts.withLock { $0.perIdentity[identity] ?? 0 } }
    var all: Int { counts.withLock { $0.all } }
}
