import CSQLiteTuning
import GRDB

/// The current row of a statement `StoreDB.runRow` or `runRows` stepped: its columns read by
/// position (from 0), straight from SQLite. Valid only inside the closure it is given to.
package struct SteppedRow {
    fileprivate let s: UnsafeMutableRawPointer

    /// Whether column `i` is NULL.
    package func isNull(_ i: Int32) -> Bool { peerlog_sqlite_column_type(s, i) == 5 }  // SQLITE_NULL

    /// Column `i` as an integer (0 for NULL).
    package func int(_ i: Int32) -> Int64 { peerlog_sqlite_column_int64(s, i) }

    /// Column `i` as an integer, nil for NULL.
    package func optionalInt(_ i: Int32) -> Int64? { isNull(i) ? nil : int(i) }

    /// Column `i` as an unsigned integer stored by its bit pattern (`UInt64.sql`).
    package func uint(_ i: Int32) -> UInt64 { UInt64(sql: int(i)) }

    /// Column `i`'s bytes (empty for NULL).
    package func bytes(_ i: Int32) -> [UInt8] {
        var count: Int32 = 0
        guard let p = peerlog_sqlite_column_blob(s, i, &count), count > 0 else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: p, count: Int(count)))
    }

    /// Column `i`'s bytes, nil for NULL.
    package func optionalBytes(_ i: Int32) -> [UInt8]? { isNull(i) ? nil : bytes(i) }

    /// Column `i` as UTF-8 text (empty for NULL).
    package func text(_ i: Int32) -> String {
        var count: Int32 = 0
        guard let p = peerlog_sqlite_column_text(s, i, &count), count > 0 else { return "" }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(count)), as: UTF8.self)
    }

    /// Column `i` as text, nil for NULL.
    package func optionalText(_ i: Int32) -> String? { isNull(i) ? nil : text(i) }
}

extension StoreDB {
    /// The first row of `sql`, read by `read`, or nil for none; `values` bound as `run` binds
    /// them. For the reads made per receipt: GRDB's `Row` copies every column into a boxed value
    /// and finds a column by its lowercased name on each access.
    package func runRow<T>(_ sql: String, _ values: Bound..., read: (SteppedRow) throws -> T) throws -> T? {
        try firstRow(sql, values, read: read)
    }

    /// Every row of `sql`, each read by `read`, as `runRow`.
    package func runRows<T>(_ sql: String, _ values: Bound..., read: (SteppedRow) throws -> T) throws -> [T] {
        var rows = [T]()
        try step(sql, values) { row in
            rows.append(try read(row))
            return true
        }
        return rows
    }

    /// `runRow` for an array of values (no array of rows for the one read).
    func firstRow<T>(_ sql: String, _ values: [Bound], read: (SteppedRow) throws -> T) throws -> T? {
        var first: T?
        try step(sql, values) { row in
            first = try read(row)
            return false
        }
        return first
    }

    /// Binds `values`, then hands each row to `each` until it returns false or the rows end;
    /// resets the statement either way.
    private func step(_ sql: String, _ values: [Bound], each: (SteppedRow) throws -> Bool) throws {
        let statement = try db.cachedStatement(sql: sql)
        let s = UnsafeMutableRawPointer(statement.sqliteStatement)
        try bind(values, to: s, sql: sql)
        defer { _ = peerlog_sqlite_reset(s) }
        while true {
            switch peerlog_sqlite_step(s) {
            case 100: guard try each(SteppedRow(s: s)) else { return }  // SQLITE_ROW
            case 101: return  // SQLITE_DONE
            case let code:
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: db.lastErrorMessage, sql: sql)
            }
        }
    }
}
