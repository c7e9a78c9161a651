import Foundation
import GRDB

extension Store {
    /// How long a connection waits for another's lock before failing with SQLITE_BUSY.
    package static let busyTimeoutSeconds = 10

    /// What a connection does while another holds the lock it needs. SQLite's own timeout
    /// handler sleeps 1, 2, 5, 10, 15, 20, 25 … up to 100 ms between tries, so a writer behind
    /// a transaction of a few milliseconds (another `peerlog put`, the daemon committing it)
    /// oversleeps it by tens of milliseconds, and four concurrent writers spent most of a put
    /// asleep. This one tries every 0.5 ms for the first 100 ms, then every 5 ms, for
    /// `busyTimeoutSeconds` in all.
    package static var busyMode: Database.BusyMode {
        .callback { tries in
            let shortTries = 200
            let longTries = (busyTimeoutSeconds * 1000 - 100) / 5
            guard tries < shortTries + longTries else { return false }
            usleep(tries < shortTries ? 500 : 5_000)
            return true
        }
    }
}
