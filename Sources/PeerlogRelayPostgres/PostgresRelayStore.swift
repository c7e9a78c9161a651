#if PostgreSQL
import Logging
import NIOCore
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The relay's store of record in PostgreSQL (docs/PROTOCOL.md §19.3), shared by every process
/// of one relay: a row per assigned seq, `PRIMARY KEY(group_id, seq)` and `UNIQUE(group_id, cid)`.
/// As a `SequenceGate` it admits each assignment before the local replica commits it.
///
/// It is a `Service`: its connection pool (a `PostgresClient`) runs in `run()`, so put it in the
/// relay's `ServiceGroup` (before the services that use it); queries wait until it runs.
/// `start()` checks the server and creates the tables first, over a connection of its own.
public final class PostgresRelayStore: SequenceGate, Service, Sendable {
    /// The version of the relay tables this build creates and reads. `start()` records it in
    /// `peerlog_relay_schema` in a new database, and throws `RelayStoreError` with code
    /// `.schemaVersion` if the database holds a higher one.
    /// Version 2 added the groups' leases and the hand-over table; a version-1 database is
    /// brought to version 2 at start (its rows stay as they are).
    public static let schemaVersion = 2
    /// Tries of one statement that failed for a transient reason (lost connection, serialization).
    static let maxTries = 5

    /// Where the store and its connection pool log.
    public let logger: Logger
    /// The deadlines every operation runs under.
    public let limits: RelayStoreLimits
    let client: PostgresClient
    let configuration: PostgresClient.Configuration
    /// This store's name as a lease holder: random, new for every store (every process).
    let holder: String
    /// Until when this store holds each group's lease, by its own clock (a margin inside the
    /// term the server recorded).
    let leases = Mutex<[GroupID: ContinuousClock.Instant]>([:])

    /// Parses `url` (`postgres://` or `postgresql://`, `user[:password]@host[:port]/database`;
    /// host 127.0.0.1 and port 5432 when left out; no TLS) and makes the pool, without connecting.
    /// Throws `RelayStoreError` with code `.invalidURL` when the URL is malformed, names no user or
    /// database, or has a port outside 1...65535. Every operation runs under `limits`.
    public init(url: String, logger: Logger, limits: RelayStoreLimits = .init()) throws {
        self.logger = logger
        self.limits = limits
        var configuration = try PostgresURL.configuration(url)
        configuration.options.connectTimeout = limits.connectTimeout
        self.configuration = configuration
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        holder = (0..<2).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }.joined(separator: "-")
    }

    /// A direct connection's configuration (`start()`, the listener), with the connect timeout.
    var connectionConfiguration: PostgresConnection.Configuration {
        let c = configuration
        var config = PostgresConnection.Configuration(
            host: c.host ?? "127.0.0.1", port: c.port ?? 5432, username: c.username, password: c.password,
            database: c.database, tls: .disable)
        config.options.connectTimeout = TimeAmount.nanoseconds(
            limits.connectTimeout.components.seconds * 1_000_000_000
                + limits.connectTimeout.components.attoseconds / 1_000_000_000)
        return config
    }

    /// Runs the connection pool until graceful shutdown or cancellation (once per store).
    public func run() async {
        await client.run()
    }

    /// Checks that the server answers and creates the tables if they are missing, over one
    /// direct connection: at once, before `run` (a refused connection, a missing database or
    /// a schema from a newer peerlog is said here, not a minute later by the pool).
    /// Both steps (connecting, then checking and creating the tables) run under
    /// `limits.operationTimeout`: a server that accepts and never answers is said too.
    public func start() async throws {
        let c = configuration
        let host = c.host ?? "127.0.0.1"
        let port = c.port ?? 5432
        let config = connectionConfiguration
        let server = "PostgreSQL at \(host):\(port) (user \(c.username), database \(c.database ?? "?"))"
        let connection: PostgresConnection
        let deadline = limits.operationTimeout
        let logger = logger
        do {
            connection = try await withDeadline(deadline, "operationTimeout", "connect to \(server)") {
                try await PostgresConnection.connect(configuration: config, id: 0, logger: logger)
            }
        } catch let late as RelayStoreError {
            throw late
        } catch {
            throw RelayStoreError("cannot connect to \(server): \(Self.describe(error))", code: .unreachable)
        }
        do {
            let what = "create the relay tables at \(server)"
            try await withDeadline(deadline, "operationTimeout", what) { try await self.migrate(connection) }
            try? await connection.close()
        } catch {
            try? await connection.close()
            if let failure = error as? RelayStoreError { throw failure }
            if let refusal = (error as? PostgresTransactionError)?.closureError as? RelayStoreError { throw refusal }
            throw RelayStoreError("PostgreSQL: cannot create the relay tables: \(Self.describe(error))")
        }
    }

    private func migrate(_ connection: PostgresConnection) async throws {
        try await connection.withTransaction(logger: logger) { c in
            // Two processes starting at once must not race on CREATE TABLE.
            try await c.query("SELECT pg_advisory_xact_lock(7350)", logger: logger)
            try await c.query("CREATE TABLE IF NOT EXISTS peerlog_relay_schema (version INT NOT NULL)", logger: logger)
            var found: Int?
            for try await v in try await c.query("SELECT version FROM peerlog_relay_schema", logger: logger).decode(
                Int.self)
            { found = v }
            if let found, found > Self.schemaVersion {
                throw RelayStoreError(
                    "the database holds relay schema version \(found); this peerlog knows up to \(Self.schemaVersion)",
                    code: .schemaVersion)
            }
            if found == nil {
                try await c.query(
                    "INSERT INTO peerlog_relay_schema (version) VALUES (\(Self.schemaVersion))", logger: logger)
            } else if let found, found < Self.schemaVersion {
                try await c.query("UPDATE peerlog_relay_schema SET version = \(Self.schemaVersion)", logger: logger)
            }
            try await c.query(
                """
                CREATE TABLE IF NOT EXISTS peerlog_relay_log (
                  group_id BYTEA NOT NULL, seq BIGINT NOT NULL, cid BYTEA NOT NULL,
                  envelope BYTEA NOT NULL, receipt BYTEA NOT NULL, stored_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                  PRIMARY KEY (group_id, seq), UNIQUE (group_id, cid))
                """, logger: logger)
            try await createLeaseTables(c)
            try await createNotifyTrigger(c)
        }
    }

    // MARK: SequenceGate

    /// Stores the batch's rows, or none of them (`.taken`), in one statement.
    public func reserve(_ batch: [(envelope: Envelope, receipt: Receipt)]) async throws -> SequenceReservation {
        try await insert(ReservationRows(batch))
    }

    /// Stores every row in one statement (one round trip, one transaction, one WAL flush), or
    /// none of them.
    func insert(_ rows: ReservationRows) async throws -> SequenceReservation {
        guard !rows.seqs.isEmpty else { return .reserved }
        return try await retrying("store \(rows.description)") { [self] in
            do {
                // The same statement takes the receipts out of the hand-over table (§19.3): both
                // happen, or neither.
                try await client.query(
                    """
                    WITH handed AS (
                      DELETE FROM peerlog_relay_inbox i USING unnest(\(rows.groups)::bytea[], \(rows.cids)::bytea[]) AS b(group_id, cid)
                      WHERE i.group_id = b.group_id AND i.cid = b.cid)
                    INSERT INTO peerlog_relay_log (group_id, seq, cid, envelope, receipt)
                    SELECT * FROM unnest(\(rows.groups)::bytea[], \(rows.seqs)::bigint[], \(rows.cids)::bytea[], \(rows.envelopes)::bytea[], \(rows.receipts)::bytea[])
                    """, logger: logger)
                return .reserved
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
                // Taken: by another process, or by us in a try whose answer was lost. Ours only
                // if every one of these seqs holds exactly the receipt we asked for.
                let held = try await client.query(
                    """
                    SELECT count(*) FROM peerlog_relay_log l
                    JOIN unnest(\(rows.groups)::bytea[], \(rows.seqs)::bigint[], \(rows.cids)::bytea[]) AS b(group_id, seq, cid)
                      ON l.group_id = b.group_id AND l.seq = b.seq AND l.cid = b.cid
                    """, logger: logger)
                for try await n in held.decode(Int64.self) where n == Int64(rows.seqs.count) { return .reserved }
                return .taken
            }
        }
    }

    /// Runs `body` again after transient failures (lost connection, serialization failure,
    /// deadlock), a bounded number of times, all under `limits.operationTimeout`.
    func retrying<T: Sendable>(_ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withDeadline(limits.operationTimeout, "operationTimeout", what) {
            try await self.retryingTransient(what, body)
        }
    }

    private func retryingTransient<T: Sendable>(_ what: String, _ body: () async throws -> T) async throws -> T {
        var delay: UInt64 = 20
        for attempt in 1... {
            do { return try await body() } catch {
                guard attempt < Self.maxTries, Self.isTransient(error) else {
                    throw RelayStoreError("PostgreSQL: cannot \(what): \(Self.describe(error))")
                }
                logger.notice(
                    "PostgreSQL: \(what) failed (\(Self.describe(error))); try \(attempt + 1) of \(Self.maxTries)")
                try await Task.sleep(for: .milliseconds(delay))
                delay *= 2
            }
        }
        fatalError("unreachable")
    }

    static func isTransient(_ error: any Error) -> Bool {
        guard let e = error as? PSQLError else { return false }
        if let state = e.serverInfo?[.sqlState] {
            return state == "40001" || state == "40P01" || state.hasPrefix("08") || state == "57P01"
        }
        return e.code == .connectionError || e.code == .serverClosedConnection || e.code == .uncleanShutdown
    }

    /// PSQLError hides the server's message from `description` (it may hold data); the relay's
    /// own statements hold nothing secret, so say what the server said.
    static func describe(_ error: any Error) -> String {
        if let t = error as? PostgresTransactionError, let inner = t.beginError ?? t.closureError ?? t.commitError {
            return describe(inner)
        }
        guard let e = error as? PSQLError else { return "\(error)" }
        if let message = e.serverInfo?[.message] { return "\(message) (SQLSTATE \(e.serverInfo?[.sqlState] ?? "?"))" }
        if let underlying = e.underlying { return "\(e.code): \(underlying)" }
        return "\(e.code)"
    }

    // MARK: Reads

    /// The lowest and highest seq of every group in the table.
    public func heads() async throws -> [GroupID: (first: UInt64, last: UInt64)] {
        try await retrying("read the groups' heads") { [self] in
            var out = [GroupID: (first: UInt64, last: UInt64)]()
            let rows = try await client.query(
                "SELECT group_id, MIN(seq), MAX(seq) FROM peerlog_relay_log GROUP BY group_id", logger: logger)
            for try await (g, first, last) in rows.decode((ByteBuffer, Int64, Int64).self) {
                guard let group = try? GroupID(bytes: Array(g.readableBytesView)), first > 0, last >= first else {
                    continue
                }
                out[group] = (UInt64(first), UInt64(last))
            }
            return out
        }
    }

    /// Up to `limit` rows of `group` after `seq`, in seq order: (seq, envelope, receipt).
    public func entries(
        group: GroupID, after seq: UInt64, limit: Int
    ) async throws -> [(seq: UInt64, envelope: [UInt8], receipt: [UInt8])] {
        let g = ByteBuffer(bytes: group.bytes)
        let from = Int64(clamping: seq)
        let n = limit
        return try await retrying("read group \(group) after seq \(seq)") { [self] in
            var out = [(seq: UInt64, envelope: [UInt8], receipt: [UInt8])]()
            let rows = try await client.query(
                "SELECT seq, envelope, receipt FROM peerlog_relay_log WHERE group_id = \(g) AND seq > \(from) ORDER BY seq LIMIT \(n)",
                logger: logger)
            for try await (s, e, r) in rows.decode((Int64, ByteBuffer, ByteBuffer).self) {
                out.append((UInt64(s), Array(e.readableBytesView), Array(r.readableBytesView)))
            }
            return out
        }
    }

    /// Stores committed positions the table lacks (a group's history from before the relay
    /// took over, which only members bring), in one statement; rows already there are left as
    /// they are.
    public func publish(
        group: GroupID, _ items: [(seq: UInt64, cid: CID, envelope: [UInt8], receipt: [UInt8])]
    ) async throws {
        guard let first = items.first, let last = items.last else { return }
        let groups = [ByteBuffer](repeating: ByteBuffer(bytes: group.bytes), count: items.count)
        let seqs = items.map { Int64(clamping: $0.seq) }
        let cids = items.map { ByteBuffer(bytes: $0.cid.bytes) }
        let envelopes = items.map { ByteBuffer(bytes: $0.envelope) }
        let receipts = items.map { ByteBuffer(bytes: $0.receipt) }
        _ = try await retrying("publish seqs \(first.seq)…\(last.seq) of group \(group)") { [self] in
            try await client.query(
                """
                INSERT INTO peerlog_relay_log (group_id, seq, cid, envelope, receipt)
                SELECT * FROM unnest(\(groups)::bytea[], \(seqs)::bigint[], \(cids)::bytea[], \(envelopes)::bytea[], \(receipts)::bytea[])
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
    }
}
#endif
