import Foundation
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// Parent links (docs/PROTOCOL.md §10, migration 0019): kept once, keyed by the parent's row id
/// (its CID while it is not stored), and exactly the links the stored receipts name, whichever
/// way a receipt arrives or leaves the store.
@Suite struct ParentLinksTests {
    @Test func linksAreKeyedByParentWithNoSecondCopy() throws {
        let alice = try TestReplica("alice")
        let counts = try alice.replica.store.read { db in
            try [
                """
                SELECT COUNT(*) FROM sqlite_master WHERE type = 'index'
                AND tbl_name IN ('receipt_parents', 'receipt_parents_unstored')
                """,
                "SELECT COUNT(*) FROM pragma_table_info('receipt_parents') WHERE name = 'parent' AND pk = 1 AND type = 'INTEGER'",
                "SELECT COUNT(*) FROM pragma_table_info('receipt_parents') WHERE name = 'receipt_id' AND pk = 2",
                "SELECT COUNT(*) FROM pragma_table_info('receipt_parents_unstored') WHERE name = 'parent' AND pk = 1",
            ].map { try db.count(rawSQL: $0) }
        }
        #expect(counts == [0, 1, 1, 1], "no index beside the keys; keyed (parent row id, receipt_id)")
    }

    /// `peerlog check` finds a lost link, and one no receipt names.
    @Test func theCheckFindsALostLinkAndAStrayOne() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        try alice.put(group, "k", 1)
        #expect(try alice.replica.checkParentLinks() == nil)
        try alice.replica.store.write {
            try $0.execute(
                rawSQL:
                    "DELETE FROM receipt_parents WHERE (parent, receipt_id) = (SELECT parent, receipt_id FROM receipt_parents LIMIT 1)"
            )
            try $0.execute(rawSQL: "INSERT INTO receipt_parents_unstored (parent, receipt_id) VALUES (x'00', 1)")
        }
        #expect(
            try alice.replica.checkParentLinks()
                == "1 link(s) a receipt names are missing, 1 stored link(s) no receipt names")
    }

    /// A child that arrives before its parent: the parent, once stored, is not a head.
    @Test func aParentStoredAfterItsChildIsNotAHead() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let carol = try TestReplica("carol")
        let group = try groupWith(owner: alice, members: [bob])
        try alice.send(group, to: carol)
        let parent = try alice.replica.append(.entityPut(key: "a", value: 1), to: group)
        try alice.send(group, to: bob)
        let child = try bob.replica.append(.entityPut(key: "b", value: 2), to: group)
        #expect(child.receipt.parents == [parent.receipt.cid])
        _ = try carol.replica.ingest(receipts: [child.receipt])
        #expect(try carol.unstoredParentLinks() == 1, "the child names a parent not stored yet")
        #expect(try carol.parentLinkDifferences() == (0, 0))
        _ = try carol.replica.ingest(receipts: [parent.receipt])
        let heads = try carol.replica.store.read { try $0.heads(group: group, limit: 10) }
        #expect(heads == [child.receipt.cid])
        #expect(try carol.unstoredParentLinks() == 0, "the link now names the parent's row")
        #expect(try carol.parentLinkDifferences() == (0, 0))
    }

    /// The envelope for one half of an equivocation deletes the other, tentative half: its
    /// links go with it; a later receipt that names it keeps its own.
    @Test func anEquivocationsLosingHalfTakesItsLinksWithIt() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let carol = try TestReplica("carol")
        let group = try groupWith(owner: alice, members: [bob])
        try alice.send(group, to: carol)
        let heads = try alice.replica.store.read { try $0.heads(group: group, limit: 10) }
        let counter = try bob.replica.vector(of: group).authors.first { $0.0 == bob.device.device }!.1 + 1
        let one = try handmade(
            bob.device, group: group, counter: counter, op: .entityPut(key: "x", value: 1), hlc: 10, parents: heads)
        let two = try handmade(
            bob.device, group: group, counter: counter, op: .entityPut(key: "x", value: 2), hlc: 11, parents: heads)
        let next = try handmade(
            bob.device, group: group, counter: counter + 1, op: .entityPut(key: "y", value: 3), hlc: 12,
            parents: [one.cid])
        _ = try carol.replica.ingest(receipts: [one, next])
        #expect(try carol.parentLinkDifferences() == (0, 0))
        _ = try alice.replica.ingest(receipts: [two])
        try alice.send(group, to: carol)
        #expect(try carol.get("x", group, .committed) == 2, "the envelope for `two` swapped the halves")
        #expect(try carol.replica.store.read { try $0.loadReceipt(one.cid) } == nil)
        #expect(try carol.parentLinkDifferences() == (0, 0))
        #expect(try carol.unstoredParentLinks() == 1, "`next` still names `one`, now by its CID")
    }

    /// Compaction deletes pruned receipts' links and none other.
    @Test func compactionLeavesExactlyTheLinksOfWhatIsKept() throws {
        var limits = ReplicaLimits()
        limits.snapshotInterval = 50
        let alice = try TestReplica("alice", limits: limits)
        let group = try alice.replica.createGroup(name: "g")
        try alice.replica.setRetention(of: group, minAgeMillis: 0)
        for i in 0..<300 {
            alice.clock.advance(1)
            try alice.put(group, "k\(i % 5)", Int64(i))
        }
        #expect(try alice.replica.floor(of: group) != nil)
        let (kept, links) = try alice.replica.store.read {
            (
                try $0.count(rawSQL: "SELECT COUNT(*) FROM receipts"),
                try $0.count(rawSQL: "SELECT COUNT(*) FROM receipt_parents")
            )
        }
        #expect(kept < 100 && links < 100, "kept \(kept) receipts, \(links) links")
        #expect(try alice.parentLinkDifferences() == (0, 0))
        #expect(try alice.unstoredParentLinks() > 0, "kept receipts whose parents were pruned name them by CID")
    }

    /// A store from before migration 0019 (links keyed by child and the parent's CID, a second
    /// index by parent) keeps every link: by row id where the parent is stored, by CID where not.
    @Test func migrationKeepsEveryLink() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        for i in 0..<5 { try alice.put(group, "k\(i)", Int64(i)) }
        try alice.send(group, to: bob)
        let orphan = try bob.replica.append(.entityPut(key: "b", value: 1), to: group)
        let device = try LocalDevice.generate(name: "carol", createdAt: 1)
        do {
            let carol = try Replica(path: dir + "/replica.sqlite", device: device)
            let missing = try #require(orphan.receipt.parents.first)
            _ = try carol.ingest(
                receipts: try alice.holdings(group).receipts.filter { $0.cid != missing } + [orphan.receipt])
            #expect(try carol.store.read { try $0.loadReceipt(missing) } == nil)
            try carol.store.write { db in
                for statement in [
                    """
                    CREATE TABLE old_links (receipt_id INTEGER NOT NULL REFERENCES receipts(id), parent BLOB NOT NULL,
                        PRIMARY KEY(receipt_id, parent)) WITHOUT ROWID
                    """,
                    """
                    INSERT INTO old_links SELECT p.receipt_id, r.cid FROM receipt_parents p JOIN receipts r ON r.id = p.parent
                    UNION ALL SELECT receipt_id, parent FROM receipt_parents_unstored
                    """,
                    "DROP TABLE receipt_parents",
                    "DROP TABLE receipt_parents_unstored",
                    "ALTER TABLE old_links RENAME TO receipt_parents",
                    "CREATE INDEX receipt_parents_parent ON receipt_parents(parent)",
                    "DELETE FROM grdb_migrations WHERE identifier = '0019_parent_links_once'",
                ] {
                    try db.execute(rawSQL: statement)
                }
            }
        }
        let carol = try Replica(path: dir + "/replica.sqlite", device: device)
        let (links, indexes) = try carol.store.read {
            (
                try $0.count(rawSQL: "SELECT COUNT(*) FROM receipt_parents"),
                try $0.count(
                    rawSQL: "SELECT COUNT(*) FROM sqlite_master WHERE tbl_name = 'receipt_parents' AND type = 'index'")
            )
        }
        #expect(indexes == 0)
        #expect(try carol.store.read { try $0.parentLinkDifferences() } == (0, 0))
        #expect(links >= 6)
        #expect(
            try carol.store.read { try $0.count(rawSQL: "SELECT COUNT(*) FROM receipt_parents_unstored") } == 1,
            "the link to the parent carol never got names its CID")
    }
}
