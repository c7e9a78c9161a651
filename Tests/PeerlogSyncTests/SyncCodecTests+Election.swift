import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogSequencer
import PeerlogSync
import Testing

/// Election messages (PROTOCOL.md §18.3), pre-vote kinds included.
extension SyncCodecTests {
    static let electionSamples: [SequencerMessage<CID>] = [
        .requestVote(term: 6_291_459, lastSeq: 12, lastTerm: 6_291_458),
        .vote(term: 6_291_459, granted: true),
        .preVoteRequest(term: 6_291_460, lastSeq: 12, lastTerm: 6_291_458),
        .preVote(term: 6_291_460, granted: true),
        .preVote(term: 6_291_461, granted: false),
        .append(
            term: 3, prevSeq: 4, prevTerm: 2,
            entries: [SequencerEntry(seq: 5, item: cid, term: 2), SequencerEntry(seq: 6, item: cid, term: 3)],
            commitSeq: 4),
        .append(term: 3, prevSeq: 6, prevTerm: 3, entries: [], commitSeq: 6),
        .appendReply(term: 3, success: false, matchSeq: 2),
    ]

    @Test func everyElectionKindRoundTrips() throws {
        for e in Self.electionSamples {
            let m = SyncMessage.election(group: Self.g, e)
            let bytes = m.encoded()
            #expect(try SyncMessage.decode(bytes, limits: .init()) == m, "\(e)")
            #expect(CBOREncoder.encode(try CBORDecoder.decodeStrict(bytes)) == bytes, "\(e) is deterministic")
        }
    }

    /// The bytes PROTOCOL.md §18.3 shows, so an independent implementation can compare.
    @Test func preVoteExampleBytes() {
        let request = SyncMessage.election(
            group: Self.g, .preVoteRequest(term: 6_291_460, lastSeq: 12, lastTerm: 6_291_458))
        let reply = SyncMessage.election(group: Self.g, .preVote(term: 6_291_460, granted: true))
        #expect(hexString(request.encoded()) == Self.preVoteRequestHex)
        #expect(hexString(reply.encoded()) == Self.preVoteHex)
    }

    static let preVoteRequestHex =
        "a6617468656c656374696f6e646b696e64707072655f766f74655f72657175657374647465726d1a006000046567726f757050000102030405060708090a0b0c0d0e0f686c6173745f7365710c696c6173745f7465726d1a00600002"
    static let preVoteHex =
        "a5617468656c656374696f6e646b696e64687072655f766f7465647465726d1a006000046567726f757050000102030405060708090a0b0c0d0e0f676772616e746564f5"

    /// A later version's kind is ignored like an unknown message type, never a session
    /// failure; a known kind with a missing or mistyped field still is.
    @Test func unknownElectionKindIsIgnoredButMalformedKnownKindsAreNot() throws {
        let gb = CBOR.bytes(Self.g.bytes)
        let future = CBOREncoder.encode(.textMap(["t": "election", "group": gb, "kind": "lease_transfer", "term": 9]))
        #expect(try SyncMessage.decode(future, limits: .init()) == .unknown(type: "election/lease_transfer"))
        Self.reject(.textMap(["t": "election", "group": gb, "term": 9]), "malformed", "no kind")
        Self.reject(.textMap(["t": "election", "group": gb, "kind": "pre_vote", "term": 9]), "malformed", "no granted")
        Self.reject(
            .textMap([
                "t": "election", "group": gb, "kind": "pre_vote_request", "term": 9, "last_seq": 1, "last_term": "x",
            ]),
            "malformed", "last_term not a uint")
        Self.reject(
            .textMap(["t": "election", "kind": "pre_vote", "term": 9, "granted": true]), "malformed", "no group")
    }
}

/// The sequencer's own message type is what travels: its wire extension writes the §18.3 map
/// field for field, as an independent construction of that map shows, byte for byte.
extension SyncCodecTests {
    @Test func sequencerMessagesEncodeAsTheSection18Map() throws {
        let gb = CBOR.bytes(Self.g.bytes)
        let append = SequencerMessage<CID>.append(
            term: 3, prevSeq: 4, prevTerm: 2,
            entries: [
                SequencerEntry(seq: 5, item: Self.cid, term: 2), SequencerEntry(seq: 6, item: Self.cid, term: 3),
            ],
            commitSeq: 4)
        let expected = CBOR.textMap([
            "t": "election", "group": gb, "kind": "append", "term": 3, "prev_seq": 4, "prev_term": 2, "commit": 4,
            "entries": .array([.array([5, .bytes(Self.cid.bytes), 2]), .array([6, .bytes(Self.cid.bytes), 3])]),
        ])
        #expect(SyncMessage.election(group: Self.g, append).encoded() == CBOREncoder.encode(expected))
        let reply = SequencerMessage<CID>.appendReply(term: 3, success: false, matchSeq: 2)
        #expect(
            SyncMessage.election(group: Self.g, reply).encoded()
                == CBOREncoder.encode(
                    .textMap([
                        "t": "election", "group": gb, "kind": "append_reply", "term": 3, "success": false, "match": 2,
                    ])))
        let request = SequencerMessage<CID>.requestVote(term: 7, lastSeq: 12, lastTerm: 6)
        #expect(
            SyncMessage.election(group: Self.g, request).encoded()
                == CBOREncoder.encode(
                    .textMap([
                        "t": "election", "group": gb, "kind": "vote_request", "term": 7, "last_seq": 12, "last_term": 6,
                    ])))
        // And back: what decodes is the sequencer's value itself.
        guard
            case .election(_, let decoded) = try SyncMessage.decode(
                SyncMessage.election(group: Self.g, append).encoded(), limits: .init())
        else {
            Issue.record("not an election message")
            return
        }
        #expect(decoded == append)
        #expect(decoded.isWithinLimits)
    }

    /// An append beyond `maxEntries` entries, or with a gap in its seqs, is refused on decode.
    @Test func appendEntryLimitsHoldOnDecode() throws {
        let gb = CBOR.bytes(Self.g.bytes)
        let many = (1...(SequencerMessage<CID>.maxEntries + 1)).map {
            CBOR.array([.unsigned(UInt64($0)), .bytes(Self.cid.bytes), 1])
        }
        Self.reject(
            .textMap([
                "t": "election", "group": gb, "kind": "append", "term": 1, "prev_seq": 0, "prev_term": 0, "commit": 0,
                "entries": .array(many),
            ]),
            "limit", "too many entries")
        let gap = [CBOR.array([1, .bytes(Self.cid.bytes), 1]), .array([3, .bytes(Self.cid.bytes), 1])]
        Self.reject(
            .textMap([
                "t": "election", "group": gb, "kind": "append", "term": 1, "prev_seq": 0, "prev_term": 0, "commit": 0,
                "entries": .array(gap),
            ]),
            "malformed", "a gap")
    }
}
