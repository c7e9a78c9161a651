import Dispatch
import Foundation
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Synchronization
import Testing

struct StoreTests {
    /// Checkpoints run off the writer's path; the WAL must still stay bounded.
    @Test func walStaysBoundedUnderSustainedWrites() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let replica = try Replica(path: dir + "/r.sqlite", device: LocalDevice.generate(name: "w", createdAt: 1))
        let group = try replica.createGroup(name: "g")
        var largest = 0
        for i in 0..<3_000 {
            try replica.append(
                .entityPut(key: "k\(i % 200)", value: .bytes([UInt8](repeating: UInt8(i & 0xff), count: 512))),
                to: group)
            if i % 100 == 99 {
                usleep(2_000)  // let the background checkpoint run, as idle time would
                largest = max(
                    largest,
                    (try FileManager.default.attributesOfItem(atPath: dir + "/r.sqlite-wal")[.size] as? Int) ?? 0)
            }
        }
        // Without checkpoints 3,000 appends of this size write over 100 MB of WAL; the bound is
        // the writer's own checkpoint threshold (plus one transaction).
        #expect(largest <= (Store.writerCheckpointPages + 200) * 4096, "WAL reached \(largest) bytes")
        #expect(largest > 0)
        #expect(try replica.store.integrityCheck() == "ok")
    }

    /// One statement whose journal outgrows what SQLite keeps in memory (an UPDATE of every row,
    /// with a trigger, inside a transaction) moves the journal to a file and still commits. With
    /// a spill threshold of 128 KiB or more, SQLite wrote the journal in one call its unix VFS
    /// cuts to nothing, and the statement failed with SQLITE_FULL on an empty disk.
    @Test func aStatementJournalPastItsSpillThresholdStillCommits() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(path: dir + "/s.sqlite")
        #expect(Store.statementJournalInMemory, "SQLite was opened in this process before the first store")
        // Four times the threshold in 1,000-byte rows: every page of them is journalled.
        let rows = 4 * Store.statementJournalSpillBytes / 1_000 + 100
        try store.write { db in
            try db.execute(rawSQL: "CREATE TABLE spill_probe (id INTEGER PRIMARY KEY, v BLOB NOT NULL)")
            try db.execute(rawSQL: "CREATE TABLE spill_updates (n INTEGER NOT NULL)")
            try db.execute(rawSQL: "INSERT INTO spill_updates (n) VALUES (0)")
            try db.execute(
                rawSQL: """
                    CREATE TRIGGER spill_probe_updated AFTER UPDATE ON spill_probe
                    BEGIN UPDATE spill_updates SET n = n + 1; END
                    """)
            try db.execute(
                rawSQL: """
                    WITH RECURSIVE i(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM i WHERE k < \(rows))
                    INSERT INTO spill_probe (v) SELECT randomblob(1000) FROM i
                    """)
        }
        try store.write { db in
            try db.execute(rawSQL: "UPDATE spill_updates SET n = 0")
            try db.execute(rawSQL: "UPDATE spill_probe SET v = randomblob(1000)")
        }
        #expect(try store.read { try $0.count(rawSQL: "SELECT n FROM spill_updates") } == rows)
        #expect(try store.integrityCheck() == "ok")
    }

    /// A sequencer's pass reads the tentative rows for their order and takes each receipt its
    /// own transaction still holds from memory, not from the row. Here the held receipt's row
    /// cannot be decoded at all: read with it known, the pass gets the held receipt; read
    /// without, the row is decoded and refused.
    @Test func aTentativeRowWhoseReceiptIsHeldIsNotDecodedAgain() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(path: dir + "/s.sqlite")
        let device = try LocalDevice.generate(name: "w", createdAt: 1)
        let group = GroupID.random()
        let r = try device.sign(
            Receipt.Draft(
                group: group, type: "group.created", counter: 1, hlc: HLCTimestamp(physical: 1, logical: 0),
                body: GroupOperation.created(name: "g", maxMembers: 12).body))
        try store.write { db in
            try db.insertCertificate(r.certificate)
            try db.insertReceipt(r, receivedAt: 1)
            try db.execute(rawSQL: "UPDATE receipts SET payload = x'ff'")
        }
        let held = try store.read { try $0.tentativeReceipts(group: group, known: [r.cid: r]) }
        #expect(held.map(\.receipt) == [r] && held.first?.seq == nil)
        let window = try store.read {
            try $0.earliestUnrefusedTentativeReceipts(group: group, limit: 5, known: [r.cid: r])
        }
        #expect(window.map(\.receipt) == [r])
        #expect(throws: (any Error).self) { try store.read { try $0.tentativeReceipts(group: group) } }
    }

    @Test func migrationsAreRecordedAndReopenIsIdempotent() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try Store(path: dir + "/s.sqlite")
        #expect(
            try first.appliedMigrations() == [
                "0001_initial", "0002_elected_sequencer", "0003_invalid_receipt_evidence", "0004_tentative_overlay",
                "0005_change_log", "0006_sequencer_change_index", "0007_drop_outbox", "0008_revocations",
                "0009_epoch_keys", "0010_snapshots", "0011_offline_limits", "0012_evidence_caps", "0013_blobs",
                "0014_blob_cache", "0015_blob_format", "0016_overlay_merge_steps", "0017_group_operation_events",
                "0018_envelope_runs", "0019_parent_links_once", "0020_no_entities_cid_index",
                "0021_receipt_writers_numbered", "0022_envelopes_by_receipt_row",
            ])
        let again = try Store(path: dir + "/s.sqlite")
        #expect(
            try again.appliedMigrations() == [
                "0001_initial", "0002_elected_sequencer", "0003_invalid_receipt_evidence", "0004_tentative_overlay",
                "0005_change_log", "0006_sequencer_change_index", "0007_drop_outbox", "0008_revocations",
                "0009_epoch_keys", "0010_snapshots", "0011_offline_limits", "0012_evidence_caps", "0013_blobs",
                "0014_blob_cache", "0015_blob_format", "0016_overlay_merge_steps", "0017_group_operation_events",
                "0018_envelope_runs", "0019_parent_links_once", "0020_no_entities_cid_index",
                "0021_receipt_writers_numbered", "0022_envelopes_by_receipt_row",
            ])
        #expect(
            try again.read {
                try $0.count(
                    rawSQL:
                        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%'"
                )
            } == 41)
    }

    /// Opening and migrating is serialized (`StoreOpenLock`): stores opened on a fresh file at
    /// the same moment never apply a migration twice.
    @Test func storesOpenedAtOnceOnAFreshFileAllSucceed() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let failures = Mutex<[String]>([])
        for round in 0..<40 {
            let path = dir + "/s\(round).sqlite"
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                do { _ = try Store(path: path) } catch { failures.withLock { $0.append("round \(round): \(error)") } }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
    }

    /// A read-only store reads what was written (opened `immutable` once no WAL file is left)
    /// and refuses writes in one sentence naming the directory.
    @Test func readOnlyStoreReadsAndRefusesWrites() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let device = try LocalDevice.generate(name: "r", createdAt: 1)
        let path = dir + "/r.sqlite"
        let group = try Replica(path: path, device: device).createGroup(name: "g")
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "the last connection removed the WAL")
        let reader = try Replica(path: path, device: device, access: .readOnly)
        #expect(try reader.groupIDs() == [group])
        #expect(try reader.store.integrityCheck() == "ok")
        #expect { try reader.createGroup(name: "h") } throws: { ($0 as? StoreError)?.code == .readOnly }
        do { _ = try reader.createGroup(name: "h") } catch { #expect("\(error)".hasPrefix("\(dir) is read-only")) }
        #expect(try Replica(path: dir + "/absent.sqlite", device: device, access: .readOnly).groupIDs().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir + "/absent.sqlite"))
    }
}

struct DecodedCertificatesTests {
    /// A hit is the decoding of the same bytes, bad bytes throw and are not kept, and the cache
    /// never holds more than its capacity.
    @Test func aHitIsWhatDecodingReturnsAndTheCacheIsBounded() throws {
        let cache = DecodedByBytes(capacity: 3, decode: DeviceCertificate.init(encoded:))
        let devices = try (0..<5).map { try LocalDevice.generate(name: "d\($0)", createdAt: 1) }
        let a = devices[0].certificate
        #expect(try cache.value(a.encoded) == a)
        #expect(try cache.value(a.encoded) == a)
        #expect(cache.count == 1)
        #expect(throws: (any Error).self) { try cache.value([0xa1, 0x01, 0x02]) }
        #expect(cache.count == 1)
        for d in devices {
            #expect(try cache.value(d.certificate.encoded) == d.certificate)
            #expect(cache.count <= 3)
        }
    }
}

struct DecodedReceiptsTests {
    private func receipt(by device: LocalDevice, counter: UInt64) throws -> Receipt {
        try device.sign(
            Receipt.Draft(
                group: GroupID(bytes: [UInt8](repeating: 7, count: 16)), type: "entity.put", counter: counter,
                hlc: HLCTimestamp(physical: counter, logical: 0),
                body: GroupOperation.entityPut(key: "k", value: .int(Int64(counter))).body))
    }

    /// A held receipt is handed out only for its own payload, signature and certificate, and
    /// the memo never holds more than its capacity.
    @Test func aHitNeedsTheSamePayloadSignatureAndCertificate() throws {
        let memo = DecodedReceipts(capacity: 2)
        let a = try LocalDevice.generate(name: "a", createdAt: 1)
        let b = try LocalDevice.generate(name: "b", createdAt: 1)
        let r = try receipt(by: a, counter: 1)
        #expect(memo.receipt(r.cid, payload: r.payload, signature: r.signature, certificate: r.certificate) == nil)
        memo.keep(r)
        #expect(memo.receipt(r.cid, payload: r.payload, signature: r.signature, certificate: r.certificate) == r)
        var otherSignature = r.signature
        otherSignature[0] ^= 1
        #expect(memo.receipt(r.cid, payload: r.payload, signature: otherSignature, certificate: r.certificate) == nil)
        #expect(memo.receipt(r.cid, payload: r.payload, signature: r.signature, certificate: b.certificate) == nil)
        let other = try receipt(by: a, counter: 2)
        #expect(memo.receipt(r.cid, payload: other.payload, signature: r.signature, certificate: r.certificate) == nil)
        for counter in 2...4 {
            memo.keep(try receipt(by: a, counter: UInt64(counter)))
            #expect(memo.count <= 2)
        }
    }

    /// A row read back is the row, not what was stored before: a signature changed in the file
    /// after the receipt was stored (and kept) is the one read.
    @Test func aRowChangedSinceItWasStoredIsReadAsItIs() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(path: dir + "/s.sqlite")
        let r = try receipt(by: try LocalDevice.generate(name: "w", createdAt: 1), counter: 1)
        try store.write { db in
            try db.insertCertificate(r.certificate)
            _ = try db.insertReceipt(r, receivedAt: 1)
        }
        #expect(try store.read { try $0.loadReceipt(r.cid)?.receipt } == r)
        let changed = [UInt8](repeating: 9, count: 64)
        try store.write { db in
            try db.run("UPDATE receipts SET signature = ?", .bytes(changed))
        }
        #expect(try store.read { try $0.loadReceipt(r.cid)?.receipt.signature } == changed)
    }
}
