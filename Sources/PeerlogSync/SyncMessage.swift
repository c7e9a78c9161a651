import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogSequencer

/// What a "request" asks for; each answers one kind of replica backfill action.
public enum SyncRequest: Hashable, Sendable {
    /// Committed envelopes (with the receipts the requester lacks) from seq `after + 1` on.
    case after(UInt64)
    /// Committed envelopes `from...to` (a seq gap).
    case seqRange(from: UInt64, to: UInt64)
    /// An author's receipts with counters `from...to`.
    case authorCounters(author: DeviceID, from: UInt64, to: UInt64)
    /// Receipts by CID (an envelope or a parent names one the requester lacks).
    case cids([CID])
}

/// A receipt a sequencer refused, with the rule it breaks (e.g. "sender is not an active member").
public struct RefusedReceipt: Hashable, Sendable {
    /// The receipt refused.
    public let cid: CID
    /// The rule it breaks, as the sequencer words it.
    public let reason: String
    /// A refusal of `cid` for `reason`.
    public init(cid: CID, reason: String) {
        self.cid = cid
        self.reason = reason
    }
}

/// One author's highest contiguous counter in a vector.
public struct AuthorCounter: Hashable, Sendable {
    /// The author device.
    public let author: DeviceID
    /// Its highest counter such that it holds every receipt of that author from 1 up to it.
    public let counter: UInt64
    /// `author` holds its receipts 1...`counter`.
    public init(author: DeviceID, counter: UInt64) {
        self.author = author
        self.counter = counter
    }
}

/// A sync protocol message (docs/PROTOCOL.md §15.1): a deterministic CBOR map with text keys.
public enum SyncMessage: Hashable, Sendable {
    case hello(versions: [UInt64], capabilities: [String], groups: [GroupID])
    case vector(group: GroupID, committed: UInt64, authors: [AuthorCounter])
    /// Receipt containers (§3.2), per author in counter order.
    case receipts(group: GroupID, items: [[UInt8]])
    /// Envelope containers (§3.4), in seq order.
    case envelopes(group: GroupID, items: [[UInt8]])
    /// A committed chunk in one batch: the receipts the peer lacks, then the chunk's envelopes
    /// (only to peers whose hello lists the `commits` capability).
    case commits(group: GroupID, receipts: [[UInt8]], envelopes: [[UInt8]])
    case request(group: GroupID, id: UInt64, what: SyncRequest)
    case credit(UInt64)
    case caughtUp(group: GroupID)
    /// Every item answering request `id` has been sent.
    case done(group: GroupID, id: UInt64)
    case error(code: String, message: String)
    /// Between voters of an elected authority of the group (§18.3).
    case election(group: GroupID, SequencerMessage<CID>)
    /// The sender's sequencer refused receipts this peer sent it (§19.2); no credit needed.
    case refused(group: GroupID, items: [RefusedReceipt])
    /// The sender stops syncing the group with this peer (§15.2.10): the peer is no longer a
    /// member in the sender's view, or the group was deleted. No credit needed.
    case unshared(group: GroupID, reason: String)
    /// Device revocation containers (docs/PROTOCOL.md §3.6) the sender holds, at most
    /// `SyncLimits.maxRevocationsPerMessage`; sent after hello and when a new one is stored.
    case revocations(items: [[UInt8]])
    /// A snapshot of the group's committed state with its anchor and key history, for a peer that
    /// holds nothing of the group or less than the sender's floor (§23.3; capability `snapshots`).
    case snapshot(group: GroupID, SnapshotBundle)
    /// A well-formed map with a type this version does not know: ignored.
    case unknown(type: String)
    /// Keepalive (§15.2.12): says only that the sender is there; sent to a peer whose `hello`
    /// lists `keepalive`. No fields, no credit.
    case ping
    /// A blob request or answer (§24.3; capability `blobs`). No credit.
    case blob(BlobMessage)

    /// The message's type as its `t` key carries it (`caught_up` for ``caughtUp``; an unknown
    /// message's own).
    public var type: String {
        switch self {
        case .hello: "hello"
        case .vector: "vector"
        case .receipts: "receipts"
        case .envelopes: "envelopes"
        case .commits: "commits"
        case .request: "request"
        case .credit: "credit"
        case .caughtUp: "caught_up"
        case .done: "done"
        case .error: "error"
        case .election: "election"
        case .refused: "refused"
        case .unshared: "unshared"
        case .revocations: "revocations"
        case .snapshot: "snapshot"
        case .unknown(let t): t
        case .ping: "ping"
        case .blob(let m): m.type
        }
    }

    /// The message as deterministic CBOR (§1), one application message. Encodes whatever it holds:
    /// the limits are checked by `decode`, not here.
    public func encoded() -> [UInt8] { CBOREncoder.encode(cbor) }

    /// The group a message is about, if any.
    public var group: GroupID? {
        switch self {
        case .vector(let g, _, _), .receipts(let g, _), .envelopes(let g, _), .commits(let g, _, _),
            .request(let g, _, _),
            .caughtUp(let g), .done(let g, _), .election(let g, _), .refused(let g, _), .unshared(let g, _),
            .snapshot(let g, _), .blob(.get(let g, _, _, _, _)):
            g
        case .hello, .blob, .credit, .error, .revocations, .unknown, .ping: nil
        }
    }

    /// A batch: costs one credit (§15.2.8).
    public var isBatch: Bool {
        switch self {
        case .receipts, .envelopes, .commits, .snapshot: true
        default: false
        }
    }

    var cbor: CBOR {
        var m: [String: CBOR] = ["t": .text(type)]
        switch self {
        case .hello(let versions, let caps, let groups):
            m["versions"] = .array(versions.map(CBOR.unsigned))
            m["capabilities"] = .array(caps.map(CBOR.text))
            m["groups"] = .array(groups.map { .bytes($0.bytes) })
        case .vector(let g, let committed, let authors):
            m["group"] = .bytes(g.bytes)
            m["committed"] = .unsigned(committed)
            m["authors"] = .array(authors.map { [.bytes($0.author.bytes), .unsigned($0.counter)] })
        case .receipts(let g, let items), .envelopes(let g, let items):
            m["group"] = .bytes(g.bytes)
            m["items"] = .array(items.map(CBOR.bytes))
        case .commits(let g, let receipts, let envelopes):
            m["group"] = .bytes(g.bytes)
            m["receipts"] = .array(receipts.map(CBOR.bytes))
            m["envelopes"] = .array(envelopes.map(CBOR.bytes))
        case .request(let g, let id, let what):
            m["group"] = .bytes(g.bytes)
            m["id"] = .unsigned(id)
            switch what {
            case .after(let s): m["after"] = .unsigned(s)
            case .seqRange(let f, let t):
                m["from"] = .unsigned(f)
                m["to"] = .unsigned(t)
            case .authorCounters(let a, let f, let t):
                m["author"] = .bytes(a.bytes)
                m["from"] = .unsigned(f)
                m["to"] = .unsigned(t)
            case .cids(let cids): m["cids"] = .array(cids.map(\.cborLink))
            }
        case .credit(let n): m["n"] = .unsigned(n)
        case .caughtUp(let g): m["group"] = .bytes(g.bytes)
        case .done(let g, let id):
            m["group"] = .bytes(g.bytes)
            m["id"] = .unsigned(id)
        case .error(let code, let message):
            m["code"] = .text(code)
            m["message"] = .text(message)
        case .election(let g, let e):
            m["group"] = .bytes(g.bytes)
            for (k, v) in e.fields { m[k] = v }
        case .refused(let g, let items):
            m["group"] = .bytes(g.bytes)
            m["items"] = .array(items.map { .array([$0.cid.cborLink, .text($0.reason)]) })
        case .unshared(let g, let reason):
            m["group"] = .bytes(g.bytes)
            m["reason"] = .text(reason)
        case .revocations(let items): m["items"] = .array(items.map(CBOR.bytes))
        case .snapshot(let g, let b):
            m["group"] = .bytes(g.bytes)
            if let blob = b.blob {
                m["snapshot_blob"] = blob.cbor
            } else {
                m["snapshot"] = .bytes(b.snapshot)
            }
            m["anchor"] = .bytes(b.anchorEnvelope)
            m["anchor_receipt"] = .bytes(b.anchorReceipt)
            m["keys"] = .array(b.keyHistory.map { .array($0.map(CBOR.bytes)) })
            if !b.authorityHistory.isEmpty {
                m["authority"] = .array(b.authorityHistory.map { .array($0.map(CBOR.bytes)) })
            }
        case .blob(let b): for (k, v) in b.fields { m[k] = v }
        case .unknown, .ping: break
        }
        return .textMap(m)
    }
}

/// Why a message was refused; the one error type of `PeerlogSync`, a `CodedFailure`: a code
/// (an `ErrorCode`, so codes can be added), where it was raised, and equality on the code only. The code's ``Code/wireName`` is the "error"
/// message's code (docs/PROTOCOL.md §15.1): "malformed" or "limit".
public typealias SyncCodecError = CodedFailure<SyncCodecDomain>

/// The domain of ``SyncCodecError``.
public enum SyncCodecDomain: ErrorDomain {}

extension CodedFailure where Domain == SyncCodecDomain {
    static func malformed(_ m: String, file: String = #fileID, line: Int = #line) -> SyncCodecError {
        SyncCodecError(.malformed, m, file: file, line: line)
    }
    static func limit(
        _ name: String, _ value: Int, _ max: Int, file: String = #fileID, line: Int = #line
    ) -> SyncCodecError {
        SyncCodecError(.limit, "\(name) is \(value), limit \(max)", file: file, line: line)
    }
}

extension ErrorCode where Domain == SyncCodecError {
    /// The message does not parse or has the wrong structure.
    public static let malformed = Self("malformed")
    /// The message (or a list or string in it) is over one of the `SyncLimits`.
    public static let limit = Self("limit")

    /// The code sent in the "error" message: `malformed` or `limit`.
    public var wireName: String { name }
}
