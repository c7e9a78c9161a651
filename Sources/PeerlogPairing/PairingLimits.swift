/// The named limits of a pairing session (docs/PROTOCOL.md §20.7).
public struct PairingLimits: Sendable, Hashable {
    /// Guesses a code allows before it dies (3). Each guest share (`pair_start`) the host takes
    /// counts, finished or not: a guest that saw the host's key-confirmation tag has tested one guess.
    public var maxAttempts: Int
    /// How long a code lives when the user gives no `--expires` (10 minutes).
    public var defaultLifetime: Duration
    /// Largest pairing message accepted or produced, in bytes (16,384).
    public var maxMessageBytes: Int
    /// How long the I/O around an exchange waits for the peer's next message before closing (30 s).
    public var exchangeTimeout: Duration

    /// The defaults: 3 attempts, 10 minutes, 16 KiB messages, 30 s per message.
    public init() {
        self.init(
            maxAttempts: 3, defaultLifetime: .seconds(600), maxMessageBytes: 16_384, exchangeTimeout: .seconds(30))
    }

    /// Limits with each value given (tests and tools; the defaults are the protocol's).
    public init(maxAttempts: Int, defaultLifetime: Duration, maxMessageBytes: Int, exchangeTimeout: Duration) {
        self.maxAttempts = maxAttempts
        self.defaultLifetime = defaultLifetime
        self.maxMessageBytes = maxMessageBytes
        self.exchangeTimeout = exchangeTimeout
    }
}
