import PeerlogCrypto
import PeerlogEncoding

/// The messages of a pairing exchange (docs/PROTOCOL.md §20.4): each one deterministic CBOR map with a
/// text key `t` naming its type and exactly the keys that type has.
enum PairingMessage: Hashable, Sendable {
    /// host → guest, first: protocol version, purpose, nameplate, fresh session id, commitment to Yb.
    case open(version: UInt64, purpose: String, nameplate: UInt64, sid: [UInt8], commit: [UInt8])
    /// guest → host: the guest's CPace share Ya.
    case start(ya: [UInt8])
    /// host → guest: the host's CPace share Yb and its key-confirmation tag.
    case reply(yb: [UInt8], confirm: [UInt8])
    /// guest → host: the guest's key-confirmation tag and its sealed payload.
    case confirm(confirm: [UInt8], box: [UInt8])
    /// host → guest: the host's sealed payload.
    case done(box: [UInt8])
    /// Either way: the sender stops, with a code (an `ErrorCode` name) and a reason for people.
    case error(code: String, reason: String)

    /// The protocol version `pair_open` carries.
    static let version: UInt64 = 1
    /// Length of the session id.
    static let sidLength = 16
    /// Length of a confirmation tag and of the commitment.
    static let tagLength = 32
    /// Longest `reason` of a `pair_error`, in UTF-8 bytes.
    static let maxReasonBytes = 1024
    /// Longest `code` of a `pair_error`, in UTF-8 bytes.
    static let maxCodeBytes = 64

    var type: String {
        switch self {
        case .open: "pair_open"
        case .start: "pair_start"
        case .reply: "pair_reply"
        case .confirm: "pair_confirm"
        case .done: "pair_done"
        case .error: "pair_error"
        }
    }

    /// The deterministic CBOR encoding.
    func encoded() -> [UInt8] {
        var m: [String: CBOR] = ["t": .text(type)]
        switch self {
        case .open(let v, let purpose, let nameplate, let sid, let commit):
            m["v"] = .unsigned(v)
            m["purpose"] = .text(purpose)
            m["nameplate"] = .unsigned(nameplate)
            m["sid"] = .bytes(sid)
            m["commit"] = .bytes(commit)
        case .start(let ya): m["ya"] = .bytes(ya)
        case .reply(let yb, let confirm):
            m["yb"] = .bytes(yb)
            m["confirm"] = .bytes(confirm)
        case .confirm(let confirm, let box):
            m["confirm"] = .bytes(confirm)
            m["box"] = .bytes(box)
        case .done(let box): m["box"] = .bytes(box)
        case .error(let code, let reason):
            m["code"] = .text(Self.truncated(code, to: Self.maxCodeBytes))
            m["reason"] = .text(Self.truncated(reason, to: Self.maxReasonBytes))
        }
        return CBOREncoder.encode(.textMap(m))
    }

    /// `text` cut to at most `limit` UTF-8 bytes on a character boundary.
    static func truncated(_ text: String, to limit: Int) -> String {
        var out = ""
        var used = 0
        for c in text {
            let n = String(c).utf8.count
            guard used + n <= limit else { break }
            out.append(c)
            used += n
        }
        return out
    }

    /// Decodes one message, refusing anything over `maxBytes`, not strict deterministic CBOR, of an
    /// unknown type, or with missing, extra or wrongly sized fields.
    static func decode(_ input: [UInt8], maxBytes: Int) throws(PairingError) -> PairingMessage {
        guard input.count <= maxBytes else {
            throw PairingError(.malformed, "message is \(input.count) bytes, limit \(maxBytes)")
        }
        let fields = try textKeyedMap(
            input, limits: .init(maxDepth: 2, maxStringBytes: maxBytes, maxCollectionCount: 8, maxInputBytes: maxBytes),
            code: .malformed, what: "message")
        guard let type = fields["t"]?.textValue else { throw PairingError(.malformed, "message has no text \"t\"") }
        func exactly(_ keys: Set<String>) throws(PairingError) {
            guard Set(fields.keys) == keys.union(["t"]) else {
                throw PairingError(.malformed, "\(type) must have exactly the keys \(keys.union(["t"]).sorted())")
            }
        }
        func bytes(_ key: String, count: Int? = nil) throws(PairingError) -> [UInt8] {
            guard let b = fields[key]?.bytesValue, count == nil || b.count == count else {
                throw PairingError(
                    .malformed, "\(type).\(key) must be \(count.map { "\($0) bytes" } ?? "a byte string")")
            }
            return b
        }
        func text(_ key: String, maxBytes: Int) throws(PairingError) -> String {
            guard let t = fields[key]?.textValue, t.utf8.count <= maxBytes else {
                throw PairingError(.malformed, "\(type).\(key) must be text of at most \(maxBytes) bytes")
            }
            return t
        }
        func uint(_ key: String) throws(PairingError) -> UInt64 {
            guard let u = fields[key]?.unsignedValue else {
                throw PairingError(.malformed, "\(type).\(key) must be an unsigned integer")
            }
            return u
        }
        switch type {
        case "pair_open":
            try exactly(["v", "purpose", "nameplate", "sid", "commit"])
            return .open(
                version: try uint("v"), purpose: try text("purpose", maxBytes: 16), nameplate: try uint("nameplate"),
                sid: try bytes("sid", count: sidLength), commit: try bytes("commit", count: tagLength))
        case "pair_start":
            try exactly(["ya"])
            return .start(ya: try bytes("ya", count: CPace.shareLength))
        case "pair_reply":
            try exactly(["yb", "confirm"])
            return .reply(
                yb: try bytes("yb", count: CPace.shareLength), confirm: try bytes("confirm", count: tagLength))
        case "pair_confirm":
            try exactly(["confirm", "box"])
            return .confirm(confirm: try bytes("confirm", count: tagLength), box: try bytes("box"))
        case "pair_done":
            try exactly(["box"])
            return .done(box: try bytes("box"))
        case "pair_error":
            try exactly(["code", "reason"])
            return .error(
                code: try text("code", maxBytes: maxCodeBytes), reason: try text("reason", maxBytes: maxReasonBytes))
        default:
            throw PairingError(.unexpectedMessage, "unknown pairing message type \"\(type.prefix(32))\"")
        }
    }
}

/// The strict deterministic CBOR map in `bytes`, keyed by text: what every pairing message and
/// payload is. Anything else is one `code` error naming `what`.
func textKeyedMap(
    _ bytes: [UInt8], limits: CBORDecoder.Limits, code: PairingError.Code, what: String
) throws(PairingError) -> [String: CBOR] {
    let value: CBOR
    do { value = try CBORDecoder(mode: .strict, limits: limits).decode(bytes) } catch {
        throw PairingError(code, "\(what): not deterministic CBOR: \(error)")
    }
    guard case .map(let map) = value else { throw PairingError(code, "\(what) is not a CBOR map") }
    var out: [String: CBOR] = [:]
    for (k, v) in map {
        guard let key = k.textValue else { throw PairingError(code, "\(what) has a non-text key") }
        out[key] = v
    }
    return out
}
