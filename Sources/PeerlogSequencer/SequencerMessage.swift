/// A message between voters. The sender is not inside: the driver passes the
/// authenticated peer identity to ``ElectedSequencer/receive(_:from:)``.
public enum SequencerMessage<Item: Hashable & Sendable>: Sendable, Hashable {
    /// Raft RequestVote: a candidate of `term` whose log ends at (`lastSeq`, `lastTerm`).
    case requestVote(term: UInt64, lastSeq: UInt64, lastTerm: UInt64)
    /// Raft RequestVote reply.
    case vote(term: UInt64, granted: Bool)
    /// Pre-vote (Raft §9.6): "would you vote for me in `term`?", where `term` is the
    /// sender's current term + 1. Changes nothing durable on either side.
    case preVoteRequest(term: UInt64, lastSeq: UInt64, lastTerm: UInt64)
    /// Pre-vote reply: granted echoes the request's `term`; a denial carries the
    /// replier's current term.
    case preVote(term: UInt64, granted: Bool)
    /// Raft AppendEntries (also the heartbeat): `entries` follow (`prevSeq`, `prevTerm`);
    /// `prevSeq == base` always matches with `prevTerm == 0`.
    case append(term: UInt64, prevSeq: UInt64, prevTerm: UInt64, entries: [SequencerEntry<Item>], commitSeq: UInt64)
    /// Raft AppendEntries reply. On success `matchSeq` is the last seq known to equal the
    /// leader's log; on failure it is a hint: the follower may match up to `matchSeq`.
    case appendReply(term: UInt64, success: Bool, matchSeq: UInt64)

    /// The sender's current term.
    public var term: UInt64 {
        switch self {
        case .requestVote(let term, _, _), .vote(let term, _), .append(let term, _, _, _, _),
            .appendReply(let term, _, _), .preVoteRequest(let term, _, _), .preVote(let term, _):
            term
        }
    }

    /// Whether ``term`` is the sender's current term, so a higher one deposes the receiver.
    /// A pre-vote request's term is only proposed and a granted pre-vote echoes it: letting
    /// those raise terms would disrupt exactly as a real election does.
    public var carriesSenderTerm: Bool {
        switch self {
        case .preVoteRequest: false
        case .preVote(_, let granted): !granted
        case .requestVote, .vote, .append, .appendReply: true
        }
    }

    /// Whether this is a pre-vote message (``preVoteRequest(term:lastSeq:lastTerm:)`` or
    /// ``preVote(term:granted:)``), which a driver sends only to peers that understand it.
    public var isPreVote: Bool {
        switch self {
        case .preVoteRequest, .preVote: true
        case .requestVote, .vote, .append, .appendReply: false
        }
    }
}

extension SequencerMessage: Codable where Item: Codable {}

extension SequencerMessage {
    /// Largest term or seq accepted from a peer. Far beyond any real log, it keeps `+ 1`
    /// arithmetic on peer-supplied values from overflowing.
    public static var maxValue: UInt64 { UInt64(Int64.max) }

    /// Whether every term and seq in the message is at most ``maxValue``.
    public var isWithinLimits: Bool {
        let limit = Self.maxValue
        switch self {
        case .requestVote(let term, let lastSeq, let lastTerm):
            return term <= limit && lastSeq <= limit && lastTerm <= limit
        case .vote(let term, _), .preVote(let term, _):
            return term <= limit
        case .preVoteRequest(let term, let lastSeq, let lastTerm):
            return term <= limit && lastSeq <= limit && lastTerm <= limit
        case .append(let term, let prevSeq, let prevTerm, let entries, let commitSeq):
            return term <= limit && prevSeq <= limit && prevTerm <= limit && commitSeq <= limit
                && entries.allSatisfy { $0.seq <= limit && $0.term <= limit }
        case .appendReply(let term, _, let matchSeq):
            return term <= limit && matchSeq <= limit
        }
    }
}
