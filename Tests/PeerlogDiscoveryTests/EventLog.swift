import Foundation
import PeerlogDiscovery

/// Collects a Discovery's events (delivered on its thread) for a test to wait on.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [DiscoveryEvent] = []

    var handler: @Sendable (DiscoveryEvent) -> Void { { event in self.lock.withLock { self.events.append(event) } } }
    var all: [DiscoveryEvent] { lock.withLock { events } }

    /// The first event matching `match` within `timeout` seconds.
    func wait<T>(timeout: TimeInterval, _ match: (DiscoveryEvent) -> T?) -> T? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let hit = all.lazy.compactMap(match).first { return hit }
            usleep(10_000)
        } while Date() < deadline
        return nil
    }
}
