#if canImport(Glibc)
import Glibc
#endif

/// An exclusive advisory lock (flock) on `<database>.lock`, held while a store is opened and
/// migrated. Without it, processes opening a fresh database at once (a daemon and CLI
/// commands right after `peerlog init`) each saw no migrations applied and ran them all:
/// GRDB's migrator reads what is applied outside the write transaction that applies it, and
/// switching a new file to WAL mode can fail with SQLITE_BUSY without waiting. The kernel drops
/// the lock when its holder dies, so a killed process never leaves the store locked.
struct StoreOpenLock: ~Copyable {
    /// How long an opener waits for another process to finish opening the same store.
    static let timeoutSeconds = 60.0

    private let fd: Int32

    init(database path: String) throws {
        let lockPath = path + ".lock"
        // Read-only and 0644 (it holds nothing): flock needs no write access, so another user
        // sharing the directory can lock it too.
        fd = open(lockPath, O_RDONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(.openLock, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        var waited = 0.0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            guard failure == EWOULDBLOCK || failure == EINTR else {
                close(fd)
                throw StoreError(.openLock, "cannot lock \(lockPath): \(String(cString: strerror(failure)))")
            }
            guard waited < Self.timeoutSeconds else {
                close(fd)
                throw StoreError(
                    .openLock,
                    "another process has been opening \(path) for over \(Int(Self.timeoutSeconds)) s (it holds \(lockPath))"
                )
            }
            usleep(10_000)
            waited += 0.01
        }
    }

    deinit { close(fd) }  // closing the descriptor releases the lock
}
