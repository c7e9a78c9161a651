/// A voter's Raft role.
public enum SequencerRole: String, Sendable, Hashable, Codable {
    /// Accepts entries from a leader and votes.
    case follower
    /// Pre-vote (``SequencerConfig/preVote``): asking whether it could win the next term,
    /// without raising its own.
    case preCandidate
    /// Asking for votes for a new term.
    case candidate
    /// Assigns seqs; the only role whose commits the driver signs.
    case leader
}
