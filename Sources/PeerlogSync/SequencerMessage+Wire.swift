import PeerlogEncoding
import PeerlogModel
import PeerlogSequencer

/// The wire form of the messages between the voters of an elected authority (docs/PROTOCOL.md
/// §18.3), carried by the sync session as `{"t": "election", "group", "kind", …}`: Raft's
/// RequestVote and AppendEntries restricted to seq assignment, and pre-vote. The items are
/// receipt CIDs; an entry travels as `[seq, bstr(36) CID, term]`.
extension SequencerMessage where Item == CID {
    /// Entries in one append (the sequencer's `maxEntriesPerAppend`).
    public static var maxEntries: Int { 256 }

    var fields: [String: CBOR] {
        switch self {
        case .requestVote(let term, let lastSeq, let lastTerm):
            [
                "kind": "vote_request", "term": .unsigned(term), "last_seq": .unsigned(lastSeq),
                "last_term": .unsigned(lastTerm),
            ]
        case .vote(let term, let granted):
            ["kind": "vote", "term": .unsigned(term), "granted": .bool(granted)]
        case .preVoteRequest(let term, let lastSeq, let lastTerm):
            [
                "kind": "pre_vote_request", "term": .unsigned(term), "last_seq": .unsigned(lastSeq),
                "last_term": .unsigned(lastTerm),
            ]
        case .preVote(let term, let granted):
            ["kind": "pre_vote", "term": .unsigned(term), "granted": .bool(granted)]
        case .append(let term, let prevSeq, let prevTerm, let entries, let commitSeq):
            [
                "kind": "append", "term": .unsigned(term), "prev_seq": .unsigned(prevSeq),
                "prev_term": .unsigned(prevTerm),
                "commit": .unsigned(commitSeq),
                "entries": .array(
                    entries.map { .array([.unsigned($0.seq), .bytes($0.item.bytes), .unsigned($0.term)]) }),
            ]
        case .appendReply(let term, let success, let matchSeq):
            ["kind": "append_reply", "term": .unsigned(term), "success": .bool(success), "match": .unsigned(matchSeq)]
        }
    }

    /// The message, or nil for a `kind` this implementation does not know (a later version's;
    /// the session ignores it like an unknown message type).
    static func decode(_ f: [String: CBOR]) throws(SyncCodecError) -> SequencerMessage<CID>? {
        func uint(_ k: String) throws(SyncCodecError) -> UInt64 {
            guard let v = f[k]?.unsignedValue else { throw .malformed("election message lacks uint \"\(k)\"") }
            return v
        }
        func bool(_ k: String) throws(SyncCodecError) -> Bool {
            guard let v = f[k]?.boolValue else { throw .malformed("election message lacks bool \"\(k)\"") }
            return v
        }
        guard let kind = f["kind"]?.textValue else { throw .malformed("election message lacks text \"kind\"") }
        switch kind {
        case "vote_request":
            return .requestVote(term: try uint("term"), lastSeq: try uint("last_seq"), lastTerm: try uint("last_term"))
        case "vote": return .vote(term: try uint("term"), granted: try bool("granted"))
        case "pre_vote_request":
            return .preVoteRequest(
                term: try uint("term"), lastSeq: try uint("last_seq"), lastTerm: try uint("last_term"))
        case "pre_vote": return .preVote(term: try uint("term"), granted: try bool("granted"))
        case "append_reply":
            return .appendReply(term: try uint("term"), success: try bool("success"), matchSeq: try uint("match"))
        case "append":
            guard let list = f["entries"]?.arrayValue else { throw .malformed("election append lacks \"entries\"") }
            guard list.count <= maxEntries else { throw .limit("election append entries", list.count, maxEntries) }
            var entries = [SequencerEntry<CID>]()
            for item in list {
                guard let e = item.arrayValue, e.count == 3, let seq = e[0].unsignedValue, let raw = e[1].bytesValue,
                    let cid = try? CID(bytes: raw), let term = e[2].unsignedValue
                else {
                    throw .malformed("election entries must be [seq, bstr(36) CID, term]")
                }
                if let last = entries.last, seq != last.seq + 1 {
                    throw .malformed("election entries must have consecutive seqs")
                }
                entries.append(SequencerEntry(seq: seq, item: cid, term: term))
            }
            let prevSeq = try uint("prev_seq")
            if let first = entries.first, first.seq != prevSeq + 1 {
                throw .malformed("the first election entry must follow prev_seq")
            }
            return .append(
                term: try uint("term"), prevSeq: prevSeq, prevTerm: try uint("prev_term"), entries: entries,
                commitSeq: try uint("commit"))
        default:
            return nil
        }
    }
}
