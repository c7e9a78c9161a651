import Foundation
import GRDB

/// How a store is opened: read-only when its file or directory cannot be written.
public enum StoreAccess: Sendable {
    /// Reads and writes.
    case readWrite
    /// Reads only: every write throws `StoreError` `.readOnly`.
    case readOnly
}

extension Store {
    /// How a store is opened (``StoreAccess``).
    package typealias Access = StoreAccess

    /// `.readOnly` when `path` (or, for a file not yet made, its directory) is not writable:
    /// a read-only mount, or another user's home. `access(2)` reports EROFS even to root.
    package static func availableAccess(at path: String) -> Access {
        let directory = (path as NSString).deletingLastPathComponent
        guard Glibc.access(directory.isEmpty ? "." : directory, W_OK) == 0 else { return .readOnly }
        guard Glibc.access(path, F_OK) != 0 || Glibc.access(path, W_OK) == 0 else { return .readOnly }
        return .readWrite
    }

    /// A read-only connection. SQLite reads a WAL database only through its -wal and -shm
    /// files, which it cannot create in an unwritable directory; when they are absent (every
    /// writer closed cleanly, so everything is in the main file) the file is opened
    /// `immutable`, which needs neither. A home whose store was never made reads as empty.
    static func openReadOnly(path: String) throws -> DatabaseQueue {
        guard FileManager.default.fileExists(atPath: path) else {
            let empty = try DatabaseQueue()
            try Migrations.migrator.migrate(empty)
            return empty
        }
        var config = Configuration()
        config.readonly = true
        config.busyMode = Store.busyMode
        let walPresent =
            FileManager.default.fileExists(atPath: path + "-wal")
            && FileManager.default.fileExists(atPath: path + "-shm")
        let queue = try DatabaseQueue(path: walPresent ? path : immutableURI(path), configuration: config)
        guard try queue.read({ try Migrations.migrator.hasCompletedMigrations($0) }) else {
            throw StoreError(
                .needsUpgrade,
                "\(path) was made by an older version and needs upgrading, which needs write access to its directory")
        }
        return queue
    }

    /// `file:PATH?immutable=1` (Debian's SQLite accepts URI file names; SQLITE_USE_URI).
    static func immutableURI(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return "file:" + (absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute) + "?immutable=1"
    }

    /// The one-line refusal of a write to a read-only store.
    var readOnlyRefusal: StoreError {
        let directory = (path as NSString).deletingLastPathComponent
        return StoreError(
            .readOnly,
            "\(directory.isEmpty ? "." : directory) is read-only: this command writes to the replica and cannot run here (commands that only read still work)"
        )
    }
}
