/// Deadlines of the relay's PostgreSQL store (docs/PROTOCOL.md §19.3): a database that stopped,
/// or one that accepts connections and never answers, is reported within seconds; and the term
/// of a group's lease.
public struct RelayStoreLimits: Sendable {
    /// One operation of the store (a reservation, a read of heads or rows, a publish, the
    /// checks and migration of `start()`), its retries of transient failures included.
    public var operationTimeout: Duration = .seconds(5)
    /// Opening a TCP connection to the server (the pool's, `start()`'s and the listener's).
    public var connectTimeout: Duration = .seconds(3)
    /// How long a process holds a group's lease (§19.3) after it last took or renewed it: the
    /// longest another process waits to take over a group whose holder stopped.
    public var leaseTerm: Duration = .seconds(5)

    /// The defaults above.
    public init() {}
}
