import GRDB

extension Store {
    /// Runs `sql` on the store file at `path`, which no `Store` holds open, in one transaction
    /// with foreign keys off: SQLite's way to change a table's shape (create the new table, copy,
    /// drop the old, rename; https://sqlite.org/lang_altertable.html#otheralter), which a `Store`
    /// connection cannot take (its foreign keys are on, and the pragma cannot change inside a
    /// transaction). For tests that put a store back into the shape an older version left it in,
    /// so that the migrations since run on it as they would on a user's store.
    package static func rewriteShape(path: String, sql: String) throws {
        var config = Configuration()
        config.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: path, configuration: config)
        try queue.write { try $0.execute(sql: sql) }
    }
}
