/// The fixed parameters of one elected sequencer authority. Every voter must use an equal
/// config (same voters, same base) for the group's authority.
public struct SequencerConfig<Voter: Hashable & Comparable & Sendable>: Sendable, Hashable {
    /// Raft majorities stay small and cheap to reach; the brief bounds groups to 1...9 voters.
    public static var maxVoters: Int { 9 }

    /// The voter devices, sorted ascending and unique.
    public let voters: [Voter]
    /// Seqs `1...base` were committed by an earlier authority and are final; this authority
    /// assigns `base + 1` onward. Plays the role of Raft's snapshot (`lastIncludedIndex`,
    /// `lastIncludedTerm = 0`).
    public let base: UInt64
    /// A follower or candidate starts an election after a random number of ticks in this
    /// range without hearing from a leader (Raft §5.2 randomized timeouts).
    public let electionTimeoutTicks: ClosedRange<Int>
    /// A leader sends `append` to every follower at least this often.
    public let heartbeatTicks: Int
    /// At most this many entries per `append`, bounding message size.
    public let maxEntriesPerAppend: Int
    /// Raft §9.6 pre-vote: a voter whose timer fires first asks whether it could win, and
    /// raises its term only if a majority says yes, so a voter rejoining after a partition
    /// cannot depose a leader that kept its majority.
    public let preVote: Bool
    /// Raft §6.2 check-quorum: a leader that has not heard from a majority (itself included)
    /// for ``electionTimeoutTicks``' upper bound steps down, so a leader cut off from its
    /// majority stops accepting proposals that can never commit.
    public let checkQuorum: Bool

    /// Validates and normalizes (sorts) the voter set.
    ///
    /// - Throws: ``SequencerError/Code/invalidConfig`` for an empty, oversized or duplicated
    ///   voter set, `heartbeatTicks < 1`, an election timeout not above the heartbeat
    ///   interval, or `maxEntriesPerAppend < 1`.
    public init(
        voters: [Voter],
        base: UInt64,
        electionTimeoutTicks: ClosedRange<Int> = 6...12,
        heartbeatTicks: Int = 2,
        maxEntriesPerAppend: Int = 256,
        preVote: Bool = true,
        checkQuorum: Bool = true
    ) throws(SequencerError) {
        let sorted = voters.sorted()
        guard (1...Self.maxVoters).contains(sorted.count) else {
            throw SequencerError(.invalidConfig, "need 1...\(Self.maxVoters) voters, got \(sorted.count)")
        }
        for i in 1..<sorted.count where sorted[i - 1] == sorted[i] {
            throw SequencerError(.invalidConfig, "duplicate voter \(sorted[i])")
        }
        guard heartbeatTicks >= 1 else {
            throw SequencerError(.invalidConfig, "heartbeatTicks must be >= 1")
        }
        // A timeout at or below the heartbeat interval would depose healthy leaders.
        guard electionTimeoutTicks.lowerBound > heartbeatTicks else {
            throw SequencerError(.invalidConfig, "electionTimeoutTicks must start above heartbeatTicks")
        }
        guard maxEntriesPerAppend >= 1 else {
            throw SequencerError(.invalidConfig, "maxEntriesPerAppend must be >= 1")
        }
        self.voters = sorted
        self.base = base
        self.electionTimeoutTicks = electionTimeoutTicks
        self.heartbeatTicks = heartbeatTicks
        self.maxEntriesPerAppend = maxEntriesPerAppend
        self.preVote = preVote
        self.checkQuorum = checkQuorum
    }

    /// A voter that accepted an append from its leader (or granted a vote) fewer than this
    /// many ticks ago denies pre-votes. The shortest election timeout less one tick: voters'
    /// tick clocks are not aligned, so a pre-candidate whose shortest timeout just fired may
    /// be a tick ahead of a voter that heard the same last heartbeat, and denying it then
    /// would cost a whole extra timeout after a leader crash. Always above the heartbeat
    /// interval, so followers of a live leader deny.
    public var preVoteLeaseTicks: Int { max(electionTimeoutTicks.lowerBound - 1, heartbeatTicks + 1) }

    /// Votes (and persisted copies) needed to elect a leader or commit an entry.
    public var quorum: Int { voters.count / 2 + 1 }

    /// The position of `voter` in ``voters``, or nil if it is not a voter.
    public func index(of voter: Voter) -> Int? {
        var low = 0
        var high = voters.count
        while low < high {
            let mid = (low + high) / 2
            if voters[mid] < voter { low = mid + 1 } else { high = mid }
        }
        return low < voters.count && voters[low] == voter ? low : nil
    }
}
