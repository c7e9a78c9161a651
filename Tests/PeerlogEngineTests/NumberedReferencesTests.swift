import Foundation
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// Keys and CIDs a row would repeat, named by number instead (docs/PROTOCOL.md §10): a receipt
/// names its author by its number in `authors` and its certificate by row id (migration 0021;
/// the author's and identity's keys are read from the certificate), and an envelope names its
/// receipt by row id (0022).
@Suite struct NumberedReferencesTests {
    /// An envelope row cannot be written for a receipt not stored: nothing could serve it.
    @Test func anEnvelopeRowNeedsItsReceipt() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        let stray = try handmade(alice.device, group: group, counter: 9, op: .entityPut(key: "k", value: .int(1)))
        #expect(throws: (any Error).self) {
            try alice.replica.store.write {
                try $0.insertUnsignedEnvelope(
                    group: group, seq: 2, cid: stray.cid, term: 0, outcome: .applied, reason: nil)
            }
        }
        #expect(try alice.replica.store.read { try $0.committedSeq(group: group) } == 1)
        let columns = try alice.replica.store.read {
            try $0.count(
                rawSQL: """
                    SELECT COUNT(*) FROM pragma_table_info('envelopes')
                    WHERE name IN ('cid', 'sequencer', 'received_at') OR (name = 'receipt_id' AND type = 'INTEGER')
                    """)
        }
        #expect(columns == 1, "receipt_id, and no cid, sequencer or received_at column")
    }

    @Test func rowsHoldNoKeyOfTheirWriter() throws {
        let alice = try TestReplica("alice")
        let group = try alice.replica.createGroup(name: "g")
        try alice.put(group, "k", 1)
        let (columns, authors, blobs) = try alice.replica.store.read { db in
            (
                try db.count(
                    rawSQL: """
                        SELECT COUNT(*) FROM pragma_table_info('receipts')
                        WHERE name IN ('identity', 'certificate_cid') OR (name IN ('author', 'certificate') AND type = 'INTEGER')
                        """),
                try db.count(rawSQL: "SELECT COUNT(*) FROM authors"),
                try db.count(
                    rawSQL:
                        "SELECT COUNT(*) FROM receipts WHERE typeof(author) != 'integer' OR typeof(certificate) != 'integer'"
                )
            )
        }
        #expect(columns == 2, "author and certificate are integers; no identity or certificate CID column")
        #expect(authors == 1)
        #expect(blobs == 0)
    }

    /// `peerlog check` finds a receipt whose author number names another device, and an
    /// envelope whose receipt row is at another seq.
    @Test func theCheckFindsRowsThatNameTheWrongRow() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        try alice.put(group, "k", 1)
        try alice.put(group, "l", 2)
        #expect(try alice.replica.checkRowReferences() == nil)
        try alice.replica.store.write {
            try $0.execute(
                rawSQL: """
                    UPDATE receipts SET author = (SELECT MAX(id) FROM authors)
                    WHERE id = (SELECT MAX(id) FROM receipts WHERE author = (SELECT MIN(id) FROM authors))
                    """)
        }
        #expect(
            try alice.replica.checkRowReferences()
                == "1 receipt(s) whose author is not their certificate's device, "
                + "0 envelope(s) whose receipt row is missing or at another group or seq")
        try alice.replica.store.write {
            try $0.execute(
                rawSQL: """
                    UPDATE receipts SET seq = seq + 100
                    WHERE id = (SELECT receipt_id FROM envelopes WHERE seq = (SELECT MAX(seq) FROM envelopes))
                    """)
        }
        #expect(
            try alice.replica.checkRowReferences()?.hasSuffix(
                "1 envelope(s) whose receipt row is missing or at another group or seq") == true)
    }

    /// A number given in a transaction that rolled back names nothing later: the numbers a
    /// transaction remembers (`RowNumbers`) go with it.
    @Test func aRolledBackNumberIsNotNamedLater() throws {
        struct Stop: Error {}
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let carol = try TestReplica("carol")
        let group = try alice.replica.createGroup(name: "g")
        let first = try handmade(bob.device, group: group, counter: 1, op: .entityPut(key: "k", value: .int(1)))
        let second = try handmade(bob.device, group: group, counter: 2, op: .entityPut(key: "k", value: .int(2)))
        let store = alice.replica.store
        #expect(throws: Stop.self) {
            try store.write { db in
                try db.insertCertificate(bob.device.certificate)
                try db.insertReceipt(first, receivedAt: 1)
                throw Stop()
            }
        }
        try store.write { db in
            // Another device takes the number the rolled-back one was given.
            try db.insertCertificate(carol.device.certificate)
            try db.insertReceipt(
                try handmade(carol.device, group: group, counter: 1, op: .entityPut(key: "c", value: .int(1))),
                receivedAt: 1)
            try db.insertCertificate(bob.device.certificate)
            try db.insertReceipt(second, receivedAt: 1)
        }
        let read = try #require(try store.read { try $0.loadReceipt(second.cid) })
        #expect(read.receipt.author == bob.device.device)
        #expect(try store.read { try $0.loadReceipt(first.cid) } == nil)
        #expect(try store.read { try $0.count(rawSQL: "SELECT COUNT(*) FROM authors") } == 3)
    }

    /// A store from before migration 0021, with two authors and tentative receipts: every
    /// receipt reads back the same after the migration, and the waiting counts, parent links and
    /// author counters still agree with the rows.
    @Test func aStoreFromBeforeTheMigrationReadsTheSame() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/replica.sqlite"
        let alice = try TestReplica("alice")
        let bobDevice = try LocalDevice.deterministic(seed: Array("bob".utf8), name: "bob", createdAt: 1)
        let group = try alice.replica.createGroup(name: "g")
        try alice.replica.append(.memberAdded(identity: bobDevice.identity, role: .member), to: group)
        try alice.put(group, "a", 1)
        var before: [Receipt] = []
        var counters: [String] = []
        var envelopesBefore: [[UInt8]] = []
        do {
            let bob = try Replica(path: path, device: bobDevice)
            let held = try alice.holdings(group)
            _ = try bob.ingest(receipts: held.receipts, envelopes: held.envelopes)
            try bob.append(.inviteAccepted, to: group)
            try bob.append(.entityPut(key: "b", value: 2), to: group)
            try bob.append(.entityPut(key: "c", value: 3), to: group)
            before = try bob.store.read { try $0.allReceipts(group: group).map(\.receipt) }
            envelopesBefore = try TestReplica.holdings(group, of: bob).envelopes.map(\.encoded)
            counters = try bob.store.read { try $0.authorCounters(group: group) }.map { "\($0.0)=\($0.1)" }
            #expect(try bob.store.read { try $0.tentativeCount(group: group) } == 3)
        }
        try Store.rewriteShape(path: path, sql: Self.shapeBefore0021(withOfflineLimits: true))
        let bob = try Replica(path: path, device: bobDevice)
        let after = try bob.store.read { try $0.allReceipts(group: group).map(\.receipt) }
        #expect(before.count == 6)
        #expect(after.map(\.cid) == before.map(\.cid))
        #expect(after.map(\.payload) == before.map(\.payload), "each payload is put back from the same columns")
        #expect(after.map(\.certificate.cid) == before.map(\.certificate.cid))
        let envelopesAfter = try TestReplica.holdings(group, of: bob).envelopes.map(\.encoded)
        #expect(envelopesBefore.count == 3)
        #expect(envelopesAfter == envelopesBefore, "each envelope is served as it was signed")
        #expect(try bob.store.read { try $0.committedSeq(of: before[0].cid) } == 1)
        #expect(try bob.store.read { try $0.authorCounters(group: group) }.map { "\($0.0)=\($0.1)" } == counters)
        #expect(try bob.checkWaitingCounts(of: group) == nil)
        #expect(try bob.checkParentLinks() == nil)
        #expect(try bob.offlineHeadroom(of: group).waiting == 3)
        // Still writable: the next receipt takes the number the migration gave its author.
        try bob.append(.entityPut(key: "d", value: 4), to: group)
        #expect(try bob.store.read { try $0.count(rawSQL: "SELECT COUNT(*) FROM authors") } == 2)
    }

    /// The export lists receipts by author device key, then counter, whatever order the authors
    /// were numbered in (§13).
    @Test func theExportOrdersAuthorsByTheirKeys() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        try bob.put(group, "b", 1)
        try alice.send(group, to: bob)
        try bob.send(group, to: alice)
        try alice.put(group, "a", 2)
        var authors: [[UInt8]] = []
        try alice.replica.store.read { db in
            try db.forEachReceipt(group: group) { authors.append($0.author.bytes) }
        }
        #expect(Set(authors).count == 2)
        #expect(authors == authors.sorted { $0.lexicographicallyPrecedes($1) }, "by author key, not by number")
    }

    /// SQL that puts a store of today back into the shape it had before migration 0021 (author,
    /// identity and certificate CID in every receipt row, `certificates` keyed by CID) and 0022
    /// (envelopes naming their receipt by CID), as the migrations up to 0020 left it;
    /// `withOfflineLimits: false` also as before 0011 (the caller dropped 0011's tables).
    /// Deletes both records, so opening the store runs both again.
    static func shapeBefore0021(withOfflineLimits: Bool) -> String {
        let waiting =
            withOfflineLimits
            ? """
            CREATE INDEX receipts_waiting ON receipts(group_id, author, received_at) WHERE seq IS NULL;
            CREATE TRIGGER waiting_receipt_stored AFTER INSERT ON receipts WHEN NEW.seq IS NULL
                BEGIN
                    INSERT INTO waiting_counts (group_id, author, count) VALUES (NEW.group_id, NEW.author, 1)
                        ON CONFLICT (group_id, author) DO UPDATE SET count = count + 1;
                END;
            CREATE TRIGGER waiting_receipt_committed AFTER UPDATE OF seq ON receipts
                WHEN OLD.seq IS NULL AND NEW.seq IS NOT NULL
                BEGIN
                    UPDATE waiting_counts SET count = count - 1 WHERE group_id = OLD.group_id AND author = OLD.author;
                END;
            CREATE TRIGGER waiting_receipt_uncommitted AFTER UPDATE OF seq ON receipts
                WHEN OLD.seq IS NOT NULL AND NEW.seq IS NULL
                BEGIN
                    INSERT INTO waiting_counts (group_id, author, count) VALUES (NEW.group_id, NEW.author, 1)
                        ON CONFLICT (group_id, author) DO UPDATE SET count = count + 1;
                END;
            CREATE TRIGGER waiting_receipt_removed AFTER DELETE ON receipts WHEN OLD.seq IS NULL
                BEGIN
                    UPDATE waiting_counts SET count = count - 1 WHERE group_id = OLD.group_id AND author = OLD.author;
                END;
            """ : ""
        return """
            CREATE TABLE envelopes_before (
                group_id BLOB NOT NULL, seq INTEGER NOT NULL, cid BLOB NOT NULL UNIQUE, term INTEGER NOT NULL,
                sequencer BLOB NOT NULL, received_at INTEGER NOT NULL, payload BLOB NOT NULL, signature BLOB NOT NULL,
                outcome TEXT NOT NULL, reason TEXT, run_id INTEGER REFERENCES envelope_runs(id),
                PRIMARY KEY(group_id, seq)
            );
            INSERT INTO envelopes_before
                (rowid, group_id, seq, cid, term, sequencer, received_at, payload, signature, outcome, reason, run_id)
                SELECT e.rowid, e.group_id, e.seq, r.cid, e.term, x'', 0, e.payload, e.signature, e.outcome, e.reason,
                       e.run_id
                FROM envelopes e JOIN receipts r ON r.id = e.receipt_id;
            DROP TABLE envelopes;
            ALTER TABLE envelopes_before RENAME TO envelopes;
            DELETE FROM grdb_migrations WHERE identifier = '0022_envelopes_by_receipt_row';
            CREATE TABLE certificates_before (
                cid BLOB PRIMARY KEY, identity BLOB NOT NULL, device BLOB NOT NULL, noise_key BLOB NOT NULL,
                name TEXT NOT NULL, created_at INTEGER NOT NULL, encoded BLOB NOT NULL
            ) WITHOUT ROWID;
            INSERT INTO certificates_before SELECT cid, identity, device, noise_key, name, created_at, encoded FROM certificates;
            CREATE TABLE receipts_before (
                id INTEGER PRIMARY KEY, cid BLOB NOT NULL UNIQUE, group_id BLOB NOT NULL, author BLOB NOT NULL,
                author_counter INTEGER NOT NULL, identity BLOB NOT NULL, type TEXT NOT NULL, hlc INTEGER NOT NULL,
                payload BLOB NOT NULL, signature BLOB NOT NULL, certificate_cid BLOB NOT NULL REFERENCES certificates(cid),
                received_at INTEGER NOT NULL, seq INTEGER, UNIQUE(group_id, author, author_counter)
            );
            INSERT INTO receipts_before
                SELECT r.id, r.cid, r.group_id, a.device, r.author_counter, c.identity, r.type, r.hlc, r.payload,
                       r.signature, c.cid, r.received_at, r.seq
                FROM receipts r JOIN authors a ON a.id = r.author JOIN certificates c ON c.id = r.certificate;
            DROP TABLE receipts;
            DROP TABLE certificates;
            DROP TABLE authors;
            ALTER TABLE certificates_before RENAME TO certificates;
            ALTER TABLE receipts_before RENAME TO receipts;
            CREATE INDEX receipts_tentative ON receipts(group_id, hlc, cid) WHERE seq IS NULL;
            CREATE INDEX receipts_created ON receipts(group_id) WHERE type = 'group.created';
            CREATE INDEX receipts_group_operations ON receipts(id, seq) WHERE type LIKE 'group.%';
            CREATE INDEX receipts_sequencer_changes ON receipts(group_id, seq)
                WHERE type = 'group.sequencer_changed' AND seq IS NOT NULL;
            CREATE TRIGGER overlay_receipt_stored AFTER INSERT ON receipts
                BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = NEW.group_id; END;
            CREATE TRIGGER overlay_receipt_committed AFTER UPDATE OF seq ON receipts
                BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = NEW.group_id; END;
            CREATE TRIGGER overlay_receipt_removed AFTER DELETE ON receipts
                BEGIN UPDATE overlay_groups SET changes = changes + 1 WHERE group_id = OLD.group_id; END;
            CREATE TRIGGER group_operation_stored AFTER INSERT ON receipts WHEN NEW.type LIKE 'group.%'
                BEGIN UPDATE group_operation_events SET count = count + 1 WHERE id = 1; END;
            CREATE TRIGGER group_operation_sequenced AFTER UPDATE OF seq ON receipts
                WHEN NEW.type LIKE 'group.%' AND OLD.seq IS NOT NEW.seq
                BEGIN UPDATE group_operation_events SET count = count + 1 WHERE id = 1; END;
            CREATE TRIGGER group_operation_removed AFTER DELETE ON receipts WHEN OLD.type LIKE 'group.%'
                BEGIN UPDATE group_operation_events SET count = count + 1 WHERE id = 1; END;
            \(waiting)
            DELETE FROM grdb_migrations WHERE identifier = '0021_receipt_writers_numbered';
            """
    }
}
