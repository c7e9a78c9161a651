import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport

/// A receipt signed by `device` with an explicit counter (to build gaps and equivocations).
func handmade(
    _ device: LocalDevice, group: GroupID, counter: UInt64, op: GroupOperation, hlc: UInt64 = 1, parents: [CID] = []
) throws -> Receipt {
    try device.sign(
        Receipt.Draft(
            group: group, type: op.receiptType, counter: counter, parents: parents,
            hlc: HLCTimestamp(physical: hlc, logical: 0), body: op.body))
}

/// A group owned by `owner` with `members` invited and accepted (all committed on the owner).
func groupWith(owner: TestReplica, members: [TestReplica], id: GroupID = .random()) throws -> GroupID {
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

/// A random `entity.write` over `keys`: conditions (absent, a version from `versions`, a value)
/// and operations of every kind, some of which fail on the values they meet (a counter added to
/// a set, an insert into a counter) so rejections happen too.
func randomEntityWrite(
    _ rng: inout SeededRandom, keys: [String], step: Int, versions: [CID] = []
) -> GroupOperation {
    var conditions = [EntityWrite.Condition]()
    for _ in 0..<Int.random(in: 0...2, using: &rng) {
        let key = keys.randomElement(using: &rng)!
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: conditions.append(.absent(key: key))
        case 1:
            if let v = versions.randomElement(using: &rng) { conditions.append(.version(key: key, v)) }
        default: conditions.append(.value(key: key, .int(Int64.random(in: 0...3, using: &rng))))
        }
    }
    var changes = [EntityWrite.Change]()
    for _ in 0..<Int.random(in: 1...3, using: &rng) {
        let key = keys.randomElement(using: &rng)!
        let element = CBOR.int(Int64.random(in: 0...4, using: &rng))
        switch Int.random(in: 0..<7, using: &rng) {
        case 0: changes.append(.put(key: key, value: .int(Int64(step % 4))))
        case 1: changes.append(.delete(key: key))
        case 2: changes.append(.add(key: key, by: Int64.random(in: -3...5, using: &rng)))
        case 3: changes.append(.insert(key: key, elements: [element]))
        case 4: changes.append(.remove(key: key, elements: [element]))
        case 5: changes.append(.setFields(key: key, fields: ["f\(step % 3)": element]))
        default: changes.append(.removeFields(key: key, fields: ["f\(step % 3)"]))
        }
    }
    return .entityWrite(EntityWrite(conditions: conditions, changes: changes))
}
