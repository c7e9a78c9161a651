import CSQLiteTuning
import GRDB
import PeerlogModel

/// A value bound straight to a statement parameter by `StoreDB.run`.
package enum Bound: Sendable {
    case int(Int64)
    case bytes([UInt8])
    case text(String)
    case null

    /// A group's id, bound as its bytes.
    static func group(_ g: GroupID) -> Bound { .bytes(g.bytes) }
    /// A boolean, bound as 0 or 1 (as GRDB stores one).
    static func bool(_ b: Bool) -> Bound { .int(b ? 1 : 0) }
    /// Bytes, or NULL.
    static func bytesOrNull(_ b: [UInt8]?) -> Bound { b.map { .bytes($0) } ?? .null }
    /// Text, or NULL.
    static func textOrNull(_ t: String?) -> Bound { t.map { .text($0) } ?? .null }
}

extension StoreDB {
    /// Executes `sql` (prepared once per connection, as `execute` does) with `values` bound
    /// straight to its parameters, for the statements the store runs per receipt: GRDB's
    /// arguments box every value (`StatementArguments`, `DatabaseValue`), which cost a quarter of
    /// the instructions of a committed ingest's writes (callgrind, `peerlog-bench ingest 3000`).
    /// Runs only inside a transaction: a statement after an error that rolled the transaction
    /// back (a full disk) would otherwise commit on its own, which GRDB's own path refuses too.
    package func run(_ sql: String, _ values: Bound...) throws {
        let statement = try db.cachedStatement(sql: sql)
        let s = UnsafeMutableRawPointer(statement.sqliteStatement)
        guard peerlog_sqlite_autocommit(s) == 0 else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE, message: "a store write ran outside a transaction", sql: sql)
        }
        try bind(values, to: s, sql: sql)
        let done: Int32 = 101  // SQLITE_DONE
        let code = peerlog_sqlite_step_all(s)
        let message = code == done ? nil : db.lastErrorMessage
        _ = peerlog_sqlite_reset(s)
        guard code == done else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
        }
    }

    /// The first column of the first row of `sql` as an integer (nil for no row or NULL), with
    /// `values` bound as `run` binds them: the reads the store makes per receipt.
    package func runInt(_ sql: String, _ values: Bound...) throws -> Int64? {
        try firstRow(sql, values) { $0.optionalInt(0) } ?? nil
    }

    /// Resets `s` and binds `values` to its parameters, from the first.
    func bind(_ values: [Bound], to s: UnsafeMutableRawPointer, sql: String) throws {
        _ = peerlog_sqlite_reset(s)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32 =
                switch value {
                case .int(let v): peerlog_sqlite_bind_int64(s, index, v)
                case .bytes(let b):
                    b.withUnsafeBytes { peerlog_sqlite_bind_blob(s, index, $0.baseAddress, Int32($0.count)) }
                case .text(var t):
                    t.withUTF8 { peerlog_sqlite_bind_text(s, index, $0.baseAddress, Int32($0.count)) }
                case .null: peerlog_sqlite_bind_null(s, index)
                }
            guard code == 0 else {  // SQLITE_OK
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: sql)
            }
        }
    }
}
