import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import Synchronization

/// A clock a test moves by hand: milliseconds since the epoch, from `start`.
public final class ManualClock: Sendable {
    /// The default start time: 1_700_000_000_000 ms (14 November 2023, 22:13:20 UTC).
    public static let start: UInt64 = 1_700_000_000_000
    private let value: Mutex<UInt64>

    /// A clock at `start` milliseconds.
    public init(_ start: UInt64 = ManualClock.start) { value = Mutex(start) }

    /// The current time, in milliseconds.
    public func now() -> UInt64 { value.withLock { $0 } }
    /// Moves the clock forward by `ms` milliseconds (traps on overflow).
    public func advance(_ ms: UInt64) { value.withLock { $0 += ms } }
    /// Sets the clock to `ms` milliseconds; it may go backwards.
    public func set(_ ms: UInt64) { value.withLock { $0 = ms } }
}

/// A device with its own in-memory replica on a `ManualClock`: the test fixture of the engine,
/// sync and capture tests. Its keys derive from its name (and `seed`), so histories are
/// reproducible.
public struct TestReplica: Sendable {
    /// The device: keys derived from the seed (`LocalDevice.deterministic`), the certificate's
    /// `createdAt` 1.
    public let device: LocalDevice
    /// Its replica, on an in-memory store.
    public let replica: Replica
    /// The clock the replica reads; a test moves it.
    public let clock: ManualClock

    /// Keys from "NAME/SEED".
    public init(
        _ name: String, seed: UInt64 = 0, limits: ReplicaLimits = ReplicaLimits(), clock: ManualClock = ManualClock(),
        sequenceGate: (any SequenceGate)? = nil
    ) throws {
        try self.init(name, keySeed: "\(name)/\(seed)", limits: limits, clock: clock, sequenceGate: sequenceGate)
    }

    /// Keys from `keySeed`.
    public init(
        _ name: String, keySeed: String, limits: ReplicaLimits = ReplicaLimits(), clock: ManualClock = ManualClock(),
        sequenceGate: (any SequenceGate)? = nil
    ) throws {
        device = try LocalDevice.deterministic(seed: Array(keySeed.utf8), name: name, createdAt: 1)
        self.clock = clock
        replica = Replica(
            store: try Store(), device: device, limits: limits, clock: { clock.now() }, sequenceGate: sequenceGate)
    }

    /// The device's identity.
    public var identity: IdentityID { device.identity }

    /// Everything this replica holds of a group: receipts (in author-counter order, evidence
    /// included) and committed envelopes (in seq order); below a floor (§23.2), what is left.
    public func holdings(_ group: GroupID) throws -> (receipts: [Receipt], envelopes: [Envelope]) {
        try Self.holdings(group, of: replica)
    }

    /// What `replica` holds of `group`, as `holdings(_:)` reads it (for a `Peerlog`'s replica).
    public static func holdings(
        _ group: GroupID, of replica: Replica
    ) throws -> (
        receipts: [Receipt], envelopes: [Envelope]
    ) {
        // What `export(partial: true)` writes, read straight from the store (no JSON lines).
        var receipts = [Receipt]()
        var envelopes = [Envelope]()
        try replica.store.read { db in
            try db.forEachReceipt(group: group) { receipts.append($0) }
            try db.forEachEquivocation(group: group) { receipts.append($0) }
            try db.forEachEnvelope(group: group) { envelopes.append($0) }
        }
        return (receipts, envelopes)
    }

    /// Sends everything this replica holds of `group` to `other` (one sync round, one direction).
    @discardableResult
    public func send(_ group: GroupID, to other: TestReplica) throws -> IngestReport {
        let h = try holdings(group)
        return try other.replica.ingest(receipts: h.receipts, envelopes: h.envelopes)
    }

    /// Part of what this replica holds of `group` (each receipt and envelope with probability
    /// `fraction`), about one in five of them twice, shuffled, ingested by `to` in batches of 1–8
    /// receipts and 0–4 envelopes: a sync that arrives out of order, duplicated and cut short.
    public func deliverPart(
        of group: GroupID, to: Replica, fraction: Double, using rng: inout SeededRandom
    ) throws {
        let h = try holdings(group)
        var receipts = h.receipts.filter { _ in Double.random(in: 0..<1, using: &rng) < fraction }
        var envelopes = h.envelopes.filter { _ in Double.random(in: 0..<1, using: &rng) < fraction }
        receipts += receipts.filter { _ in Int.random(in: 0..<5, using: &rng) == 0 }
        envelopes += envelopes.filter { _ in Int.random(in: 0..<5, using: &rng) == 0 }
        receipts.shuffle(using: &rng)
        envelopes.shuffle(using: &rng)
        while !receipts.isEmpty || !envelopes.isEmpty {
            let n = Int.random(in: 1...8, using: &rng)
            let m = Int.random(in: 0...4, using: &rng)
            _ = try to.ingest(receipts: Array(receipts.prefix(n)), envelopes: Array(envelopes.prefix(m)))
            receipts.removeFirst(min(n, receipts.count))
            envelopes.removeFirst(min(m, envelopes.count))
        }
    }

    /// The group's state hashes in both views.
    public func hashes(_ group: GroupID) throws -> StateHashes {
        StateHashes(
            committed: try replica.stateHash(of: group, view: .committed),
            tentative: try replica.stateHash(of: group, view: .tentative))
    }

    /// An entity's value in a view.
    public func get(_ key: String, _ group: GroupID, _ view: View = .tentative) throws -> CBOR? {
        try replica.entity(key, in: group, view: view)?.value
    }

    /// Writes an integer entity.
    public func put(_ group: GroupID, _ key: String, _ value: Int64) throws {
        try replica.append(.entityPut(key: key, value: .int(value)), to: group)
    }
}

/// A group's state hash in the committed and in the tentative view.
public struct StateHashes: Hashable, Sendable, CustomStringConvertible {
    /// The committed view's state hash (§12).
    public let committed: [UInt8]
    /// The tentative view's state hash (§12).
    public let tentative: [UInt8]

    /// Both hashes in hex, for failure messages.
    public var description: String { "committed \(hexString(committed)), tentative \(hexString(tentative))" }
}
