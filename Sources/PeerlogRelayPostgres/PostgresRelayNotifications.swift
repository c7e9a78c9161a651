#if PostgreSQL
import Logging
import PeerlogModel
import PostgresNIO
import Synchronization

// §19.3: every statement that inserts into the log (or the hand-over table) notifies
// `peerlog_relay_log` with the groups it touched, from a trigger, so whichever process (or version) inserts, the others learn of it
// at commit instead of on their next poll.
extension PostgresRelayStore {
    /// The LISTEN/NOTIFY channel on which the trigger announces, per inserting statement, the groups
    /// it touched (§19.3).
    public static let notifyChannel = "peerlog_relay_log"

    /// Creates the notifying triggers once (inside `migrate`'s transaction and advisory lock): on
    /// the log, and on the hand-over table, whose inserts wake the lease holder the same way.
    func createNotifyTrigger(_ c: PostgresConnection) async throws {
        var present = Set<String>()
        for try await name in try await c.query(
            "SELECT tgname::text FROM pg_trigger WHERE tgname IN ('peerlog_relay_notify', 'peerlog_relay_inbox_notify')",
            logger: logger
        ).decode(String.self) { present.insert(name) }
        if !present.contains("peerlog_relay_inbox_notify") {
            try await createNotifyFunction(c)
            try await c.query(
                """
                CREATE TRIGGER peerlog_relay_inbox_notify AFTER INSERT ON peerlog_relay_inbox
                  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION peerlog_relay_notify()
                """, logger: logger)
        }
        if !present.contains("peerlog_relay_notify") {
            try await createNotifyFunction(c)
            try await c.query(
                """
                CREATE TRIGGER peerlog_relay_notify AFTER INSERT ON peerlog_relay_log
                  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION peerlog_relay_notify()
                """, logger: logger)
        }
    }

    /// The function both triggers call.
    private func createNotifyFunction(_ c: PostgresConnection) async throws {
        try await c.query(
            """
            CREATE OR REPLACE FUNCTION peerlog_relay_notify() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              PERFORM pg_notify('peerlog_relay_log', (SELECT string_agg(DISTINCT encode(group_id, 'hex'), ',') FROM inserted));
              RETURN NULL;
            END $$
            """, logger: logger)
    }

    /// Listens on a connection of its own (the pool's connections are shared) and calls
    /// `notified` with the groups of each notification (nil: unknown, catch up on all), until
    /// cancelled; reconnects after a failure, and reports a reconnect as nil (notifications
    /// sent meanwhile are lost).
    public func listen(_ notified: @escaping @Sendable (Set<GroupID>?) -> Void) async {
        let config = connectionConfiguration
        var first = true
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(configuration: config, id: 1, logger: logger)
                defer { Task { try? await connection.close() } }
                try await connection.listen(on: Self.notifyChannel) { notifications in
                    if !first { notified(nil) }
                    first = false
                    for try await n in notifications { notified(Self.groups(in: n.payload)) }
                }
            } catch {
                if Task.isCancelled { return }
                logger.notice(
                    "PostgreSQL: listening for assignments failed (\(Self.describe(error))); polling until it reconnects"
                )
            }
            first = false
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// The groups a notification names (hex ids, comma-separated), or nil if any does not parse.
    static func groups(in payload: String) -> Set<GroupID>? {
        var out = Set<GroupID>()
        for hex in payload.split(separator: ",") {
            guard let bytes = hexBytes(hex), let group = try? GroupID(bytes: bytes) else { return nil }
            out.insert(group)
        }
        return out
    }

    private static func hexBytes(_ hex: Substring) -> [UInt8]? {
        guard hex.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            guard let b = UInt8(hex[i..<j], radix: 16) else { return nil }
            out.append(b)
            i = j
        }
        return out
    }
}

/// Wakes the follower early: what notifications named since its last pass.
final class FollowerWakeup: Sendable {
    private struct State {
        var groups = Set<GroupID>()
        var everything = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    /// Groups to catch up on now (nil: all of them).
    func signal(_ groups: Set<GroupID>?) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let groups { s.groups.formUnion(groups) } else { s.everything = true }
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// What was named since the last `wait` or `take` (nil: everything), without waiting.
    func take() -> Set<GroupID>? {
        state.withLock { s in
            defer {
                s.groups = []
                s.everything = false
            }
            return s.everything ? nil : s.groups
        }
    }

    /// Waits until signalled or `timeout`, then returns what was named (everything on timeout).
    func wait(timeout: Duration) async -> Set<GroupID>? {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self.signal(nil) }
        }
        defer { timer.cancel() }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                guard s.groups.isEmpty, !s.everything else { return true }
                s.waiter = c
                return false
            }
            if ready { c.resume() }
        }
        return state.withLock { s in
            defer {
                s.groups = []
                s.everything = false
            }
            return s.everything ? nil : s.groups
        }
    }
}
#endif
