/// Raft leader election restricted to sequence assignment, as a pure state machine.
///
/// Inputs are ``tick()``, ``receive(_:from:)`` and ``propose(_:)``; outputs are
/// ``SequencerEffect`` arrays the driver performs in order. No clock, I/O or threads:
/// time is ticks, randomness is a seeded ``SequencerRNG``.
///
/// Commit rule (Raft §5.4.2): a leader commits an entry once a quorum (itself included)
/// holds it *and* it belongs to the current term; earlier-term entries then commit with it.
/// A new leader appends no no-op, so earlier-term entries it inherits stay uncommitted until
/// it commits an entry proposed in its own term.
public struct ElectedSequencer<Voter: Hashable & Comparable & Sendable, Item: Hashable & Sendable>: Sendable {
    /// Configuration type for this instantiation.
    public typealias Config = SequencerConfig<Voter>
    /// Log entry type for this instantiation.
    public typealias Entry = SequencerEntry<Item>
    /// Message type for this instantiation.
    public typealias Message = SequencerMessage<Item>
    /// Effect type for this instantiation.
    public typealias Effect = SequencerEffect<Voter, Item>
    /// Persistent state type for this instantiation.
    public typealias PersistentState = SequencerPersistentState<Voter, Item>
    /// Persistent change type for this instantiation.
    public typealias PersistentChange = SequencerPersistentChange<Voter, Item>

    /// This voter.
    public let me: Voter
    /// The authority's configuration.
    public let config: Config
    let myIndex: Int

    /// Raft `currentTerm`.
    public internal(set) var term: UInt64
    /// Raft `votedFor` in ``term``.
    public internal(set) var votedFor: Voter?
    /// Current role.
    public internal(set) var role: SequencerRole = .follower
    /// The leader of ``term`` once known (``me`` when leading).
    public internal(set) var leader: Voter?
    /// Highest seq known committed (``SequencerConfig/base`` until learned).
    public internal(set) var commitSeq: UInt64

    var log: SequencerLog<Item>
    var rng: SequencerRNG
    var electionElapsed = 0
    var electionTimeout = 0
    var heartbeatElapsed = 0
    /// Per voter index: vote granted to this candidate in ``term``.
    var votesGranted: [Bool]
    /// Per voter index (leader only): next seq to send and highest seq known replicated.
    var nextSeq: [UInt64]
    var matchSeq: [UInt64]
    /// Per voter index (leader only, check-quorum): ticks since a message of this term
    /// arrived from it, saturating at the longest election timeout.
    var heardAgo: [Int]
    /// Effects gathered during the current call.
    var outbox = Outbox()

    /// Creates a voter, restoring `persisted` after a restart.
    ///
    /// - Parameters:
    ///   - persisted: the state rebuilt from every `persist` effect so far; nil for a fresh voter.
    ///   - committedThrough: optional; the highest seq the driver already saw in a
    ///     `committed` effect. Restoring it is safe (committed entries are never truncated)
    ///     and avoids reporting them again; 0 means "re-learn from the leader".
    ///   - seed: election-timeout randomness. Voters sharing a seed still diverge (the voter's
    ///     index selects a stream), but seeding from entropy at start-up is better.
    /// - Throws: ``SequencerError/Code/notAVoter`` or ``SequencerError/Code/invalidPersistedState``.
    public init(
        me: Voter,
        config: Config,
        persisted: PersistentState? = nil,
        committedThrough: UInt64 = 0,
        seed: UInt64
    ) throws(SequencerError) {
        guard let myIndex = config.index(of: me) else {
            throw SequencerError(.notAVoter, "\(me) is not in the voter set")
        }
        let state = persisted ?? PersistentState()
        if let vote = state.votedFor, !config.voters.contains(vote) {
            throw SequencerError(.invalidPersistedState, "votedFor is not a voter")
        }
        var log = SequencerLog<Item>(base: config.base)
        for entry in state.entries {
            guard entry.seq == log.lastSeq + 1 else {
                throw SequencerError(.invalidPersistedState, "entry seq \(entry.seq) does not follow \(log.lastSeq)")
            }
            guard entry.term >= log.lastTerm, entry.term >= 1, entry.term <= state.currentTerm else {
                throw SequencerError(.invalidPersistedState, "entry \(entry.seq) has term \(entry.term) out of order")
            }
            guard log.seq(of: entry.item) == nil else {
                throw SequencerError(.invalidPersistedState, "item at seq \(entry.seq) appears twice")
            }
            log.append(entry)
        }
        guard committedThrough <= log.lastSeq else {
            throw SequencerError(
                .invalidPersistedState, "committedThrough \(committedThrough) is past lastSeq \(log.lastSeq)")
        }
        self.me = me
        self.config = config
        self.myIndex = myIndex
        self.term = state.currentTerm
        self.votedFor = state.votedFor
        self.commitSeq = max(config.base, committedThrough)
        self.log = log
        self.rng = SequencerRNG(seed: seed, stream: UInt64(myIndex))
        self.votesGranted = Array(repeating: false, count: config.voters.count)
        self.nextSeq = Array(repeating: log.lastSeq + 1, count: config.voters.count)
        self.matchSeq = Array(repeating: config.base, count: config.voters.count)
        self.heardAgo = Array(repeating: 0, count: config.voters.count)
        resetElectionTimer()
    }
}

// MARK: - Read-only views for the driver

extension ElectedSequencer {
    /// Seq of the last log entry (``SequencerConfig/base`` when empty).
    public var lastSeq: UInt64 { log.lastSeq }
    /// Term of the last log entry (0 when empty).
    public var lastTerm: UInt64 { log.lastTerm }
    /// True when this voter leads ``term``; only then does ``propose(_:)`` accept items.
    public var isLeader: Bool { role == .leader }

    /// Whether `item` is anywhere in this voter's log after base (committed or not).
    public func contains(_ item: Item) -> Bool { log.seq(of: item) != nil }
    /// The seq `item` holds in this voter's log, if any; committed when `<= commitSeq`.
    public func seq(of item: Item) -> UInt64? { log.seq(of: item) }
    /// The entry at `seq`, if this voter's log holds it.
    public func entry(at seq: UInt64) -> Entry? { log.entry(at: seq) }
    /// The entries in `range`, clamped to this voter's log.
    public func entries(in range: ClosedRange<UInt64>) -> [Entry] {
        Array(log.entries(from: range.lowerBound, through: range.upperBound))
    }
    /// Entries after ``commitSeq``: assigned but not yet final; they may still be replaced.
    public var uncommittedEntries: [Entry] { entries(in: (commitSeq + 1)...max(commitSeq + 1, lastSeq)) }
    /// Items of ``uncommittedEntries``.
    public var uncommittedItems: [Item] { uncommittedEntries.map(\.item) }
    /// A copy of the persistent state (equal to applying every `persist` effect so far).
    public var persistentState: PersistentState {
        PersistentState(currentTerm: term, votedFor: votedFor, entries: log.entries)
    }
}
