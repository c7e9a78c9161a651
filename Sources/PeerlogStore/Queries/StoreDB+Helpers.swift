import Foundation
import GRDB
import PeerlogEncoding
import PeerlogModel

extension Array where Element == UInt8 {
    var blob: Data { Data(self) }
}

extension Data {
    var bytes: [UInt8] { [UInt8](self) }
}

extension UInt64 {
    /// SQLite integers are signed; unsigned values are stored as their bit pattern.
    var sql: Int64 { Int64(bitPattern: self) }
    init(sql: Int64) { self = UInt64(bitPattern: sql) }
}

extension StoreDB {
    func execute(_ sql: String, _ arguments: StatementArguments = []) throws {
        try db.cachedStatement(sql: sql).execute(arguments: arguments)
    }

    func rows(_ sql: String, _ arguments: StatementArguments = []) throws -> [Row] {
        try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
    }

    func row(_ sql: String, _ arguments: StatementArguments = []) throws -> Row? {
        try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }

    func int(_ sql: String, _ arguments: StatementArguments = []) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }

    /// Rows changed by the last statement.
    var changes: Int { db.changesCount }
}

/// Raw SQL, for this package's tests and tools only (the engine uses typed queries).
extension StoreDB {
    package func execute(rawSQL sql: String) throws { try db.cachedStatement(sql: sql).execute() }
    package func count(rawSQL sql: String) throws -> Int { try Int.fetchOne(db.cachedStatement(sql: sql)) ?? 0 }
}
