import Foundation
import PeerlogStore
import PeerlogTestSupport
import Testing

/// `StoreDB.run`: the per-receipt statements' binding without GRDB's arguments.
@Suite struct StoreRunTests {
    @Test func valuesArriveAsBoundEmptyOnesAreNotNull() throws {
        let store = try Store()
        let counts = try store.write { db in
            try db.execute(rawSQL: "CREATE TABLE t (i INTEGER, b BLOB, s TEXT)")
            try db.run("INSERT INTO t VALUES (?, ?, ?)", .int(-7), .bytes([1, 2, 3]), .text("é"))
            try db.run("INSERT INTO t VALUES (?, ?, ?)", .int(Int64.max), .bytes([]), .text(""))
            try db.run("INSERT INTO t VALUES (?, ?, ?)", .null, .null, .null)
            return try [
                "SELECT COUNT(*) FROM t WHERE i = -7 AND b = x'010203' AND s = 'é'",
                "SELECT COUNT(*) FROM t WHERE i = 9223372036854775807 AND b = x'' AND s = ''",
                "SELECT COUNT(*) FROM t WHERE i IS NULL AND b IS NULL AND s IS NULL",
            ].map { try db.count(rawSQL: $0) }
        }
        #expect(counts == [1, 1, 1])
    }

    /// A failing statement throws SQLite's error with its statement, and runs again afterwards.
    @Test func aFailureIsThrownAndTheStatementRunsAgain() throws {
        let store = try Store()
        let caught = try store.write { db -> String in
            try db.execute(rawSQL: "CREATE TABLE u (k INTEGER PRIMARY KEY)")
            try db.run("INSERT INTO u VALUES (?)", .int(1))
            let error = #expect(throws: (any Error).self) { try db.run("INSERT INTO u VALUES (?)", .int(1)) }
            try db.run("INSERT INTO u VALUES (?)", .int(2))
            #expect(try db.count(rawSQL: "SELECT COUNT(*) FROM u") == 2)
            return "\(error.map { "\($0)" } ?? "")"
        }
        #expect(caught.contains("UNIQUE constraint failed") && caught.contains("INSERT INTO u VALUES (?)"), "\(caught)")
    }

    /// After the transaction is gone (as a full disk can roll it back), a write refuses to run
    /// rather than commit on its own.
    @Test func aWriteOutsideATransactionIsRefused() throws {
        let store = try Store()
        try store.write { try $0.execute(rawSQL: "CREATE TABLE v (k INTEGER)") }
        let error = #expect(throws: (any Error).self) {
            try store.write { db in
                try db.execute(rawSQL: "ROLLBACK")
                try db.run("INSERT INTO v VALUES (?)", .int(1))
            }
        }
        #expect("\(error.map { "\($0)" } ?? "")".contains("a store write ran outside a transaction"))
        #expect(try store.read { try $0.count(rawSQL: "SELECT COUNT(*) FROM v") } == 0)
    }

    /// `runInt`: the first column of the first row, nil for no row or NULL.
    @Test func runIntReadsTheFirstColumn() throws {
        let store = try Store()
        let read = try store.write { db -> [Int64?] in
            try db.execute(rawSQL: "CREATE TABLE w (k INTEGER PRIMARY KEY, b BLOB, n INTEGER)")
            try db.run("INSERT INTO w VALUES (?, ?, ?)", .int(5), .bytes([9]), .null)
            return try [
                db.runInt("SELECT k FROM w WHERE b = ?", .bytes([9])),
                db.runInt("SELECT k FROM w WHERE b = ?", .bytes([8])),
                db.runInt("SELECT n FROM w WHERE k = ?", .int(5)),
                db.runInt("SELECT COUNT(*) FROM w WHERE k > ?", .int(0)),
            ]
        }
        #expect(read == [5, nil, nil, 1])
        #expect(throws: (any Error).self) { try store.read { try $0.runInt("SELECT missing FROM w") } }
    }

    /// `runRow` and `runRows`: columns by position; NULL told from an empty blob or text; no row
    /// is nil; every row in order; an error thrown, and the statement usable again after it.
    @Test func runRowsReadColumnsByPosition() throws {
        struct Read: Equatable {
            let i: Int64?
            let b: [UInt8]?
            let s: String?
        }
        let store = try Store()
        let (first, missing, all) = try store.write { db in
            try db.execute(rawSQL: "CREATE TABLE x (k INTEGER PRIMARY KEY, i INTEGER, b BLOB, s TEXT)")
            try db.run("INSERT INTO x VALUES (?, ?, ?, ?)", .int(1), .int(-3), .bytes([0, 255]), .text("é"))
            try db.run("INSERT INTO x VALUES (?, ?, ?, ?)", .int(2), .int(Int64.min), .bytes([]), .text(""))
            try db.run("INSERT INTO x VALUES (?, ?, ?, ?)", .int(3), .null, .null, .null)
            let read = { (r: SteppedRow) in Read(i: r.optionalInt(0), b: r.optionalBytes(1), s: r.optionalText(2)) }
            return (
                try db.runRow("SELECT i, b, s FROM x WHERE k = ?", .int(1), read: read),
                try db.runRow("SELECT i, b, s FROM x WHERE k = ?", .int(4), read: read),
                try db.runRows("SELECT i, b, s FROM x WHERE k >= ? ORDER BY k", .int(1), read: read)
            )
        }
        #expect(first == Read(i: -3, b: [0, 255], s: "é"))
        #expect(missing == nil)
        #expect(
            all == [
                Read(i: -3, b: [0, 255], s: "é"), Read(i: Int64.min, b: [], s: ""), Read(i: nil, b: nil, s: nil),
            ])
        try store.read { db in
            #expect(throws: (any Error).self) { try db.runRows("SELECT missing FROM x") { _ in 0 } }
            struct Stop: Error {}
            #expect(throws: Stop.self) { try db.runRows("SELECT k FROM x ORDER BY k") { _ -> Int in throw Stop() } }
            let keys = try db.runRows("SELECT k FROM x ORDER BY k") { $0.int(0) }
            #expect(keys == [1, 2, 3])
        }
    }
}
