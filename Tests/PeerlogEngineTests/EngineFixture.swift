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

extension TestReplica {
    /// From now on, counts the run item rows written with their path and emptied later (on the
    /// writer's connection): what a run split over two transactions costs (§10).
    func countPathsDropped() throws {
        try replica.store.write {
            try $0.execute(rawSQL: "CREATE TEMP TABLE paths_dropped (n INTEGER)")
            try $0.execute(
                rawSQL: """
                    CREATE TEMP TRIGGER count_paths_dropped AFTER UPDATE OF payload ON envelopes
                    WHEN length(OLD.payload) > 0 AND length(NEW.payload) = 0
                    BEGIN INSERT INTO paths_dropped VALUES (1); END
                    """)
        }
    }

    /// The rows `countPathsDropped` counted.
    func pathsDropped() throws -> Int {
        try replica.store.write { try $0.count(rawSQL: "SELECT COUNT(*) FROM temp.paths_dropped") }
    }
}

extension TestReplica {
    /// Parent links missing from `receipt_parents`, and links there that no stored receipt names.
    func parentLinkDifferences() throws -> (missing: Int, extra: Int) {
        try replica.store.read { try $0.parentLinkDifferences() }
    }

    /// Links that name their parent by CID: the parent is not stored.
    func unstoredParentLinks() throws -> Int {
        try replica.store.read { try $0.count(rawSQL: "SELECT COUNT(*) FROM receipt_parents_unstored") }
    }
}
