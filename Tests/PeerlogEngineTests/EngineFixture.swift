import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import Synchronization

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let value = Mutex<UInt64>(1_700_000_000_000)
    func now() -> UInt64 { value.withLock { $0 } }
    func advance(_ ms: UInt64) { value.withLock { $0 += ms } }
}

/// A device with its own in-memory replica.
struct Node {
    let device: LocalDevice
    let replica: Replica
    let clock: ManualClock

    /// A node whose keys derive from its name (and `seed`), so histories are reproducible.
    init(_ name: String, seed: UInt64 = 0, limits: ReplicaLimits = ReplicaLimits(), clock: ManualClock = ManualClock()) throws {
        device = try LocalDevice.deterministic(seed: Array("\(name)/\(seed)".utf8), name: name, createdAt: 1)
        self.clock = clock
        replica = Replica(store: try Store(), device: device, limits: limits, clock: { clock.now() })
    }

    var identity: IdentityID { device.identity }

    /// Everything this node holds of a group: receipts (in author-counter order, evidence
    /// included) and committed envelopes (in seq order).
    func holdings(_ group: GroupID) throws -> (receipts: [Receipt], envelopes: [Envelope]) {
        var receipts = [Receipt]()
        var envelopes = [Envelope]()
        try replica.export(group: group) { line in
            let json = try JSON.parse(line)
            guard case .string(let kind)? = json["kind"], case .string(let hex)? = json["data"] else { return }
            if kind == "receipt" { receipts.append(try Receipt(encoded: bytes(fromHex: hex)!)) }
            if kind == "envelope" { envelopes.append(try Envelope(encoded: bytes(fromHex: hex)!)) }
        }
        return (receipts, envelopes)
    }

    /// Sends everything this node holds of `group` to `other` (one sync round, one direction).
    @discardableResult
    func send(_ group: GroupID, to other: Node) throws -> IngestReport {
        let h = try holdings(group)
        return try other.replica.ingest(receipts: h.receipts, envelopes: h.envelopes)
    }

    func hashes(_ group: GroupID) throws -> (committed: String, tentative: String) {
        (hexString(try replica.stateHash(of: group, view: .committed)), hexString(try replica.stateHash(of: group, view: .tentative)))
    }

    func get(_ key: String, _ group: GroupID, _ view: View = .tentative) throws -> CBOR? {
        try replica.entity(key, in: group, view: view)?.value
    }
}

/// A receipt signed by `device` with an explicit counter (to build gaps and equivocations).
func handmade(_ device: LocalDevice, group: GroupID, counter: UInt64, op: GroupOperation, hlc: UInt64 = 1, parents: [CID] = []) throws -> Receipt {
    try device.sign(Receipt.Draft(group: group, type: op.receiptType, counter: counter, parents: parents, hlc: HLCTimestamp(physical: hlc, logical: 0), body: op.body))
}

/// A group owned by `owner` with `members` invited and accepted (all committed on the owner).
func groupWith(owner: Node, members: [Node], id: GroupID = .random()) throws -> GroupID {
    let group = try owner.replica.createGroup(name: "g", id: id)
    for m in members { try owner.replica.append(.memberAdded(identity: m.identity, role: .member), to: group) }
    for m in members {
        try owner.send(group, to: m)
        try m.replica.append(.inviteAccepted, to: group)
        try m.send(group, to: owner)
    }
    for m in members { try owner.send(group, to: m) }
    return group
}
