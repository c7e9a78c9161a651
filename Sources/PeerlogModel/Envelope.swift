import PeerlogCrypto
import PeerlogEncoding

/// A sequencer envelope: the sequencer's signed statement that receipt `cid` is number `seq`
/// in `group`'s committed order.
///
/// Wire form `{"envelope": bstr(payload), "sig": bstr(64)}` in two forms (docs/PROTOCOL.md §3.4–3.5):
/// single, payload `{"v": 1, "group", "seq", "cid", "term", "sequencer", "received_at"}` signed
/// itself; or an item of a batched run, payload `{"v": 1, "run": bstr(header), "seq", "cid",
/// "path"}` where `sig` signs the run header and `path` proves (seq, cid) under its Merkle root.
public struct Envelope: Hashable, Sendable {
    /// A single envelope container is under 512 bytes; a run item with an 8-hash path under 1,024.
    public static let maxEncodedBytes = 1_024

    /// The group whose committed order this extends (a run item's comes from its run header).
    public let group: GroupID
    /// 1, 2, 3 … per group, contiguous.
    public let seq: UInt64
    /// The CID of the receipt committed at `seq` (payload `cid`).
    public let receipt: CID
    /// Election term (0 for solo and relay sequencers).
    public let term: UInt64
    /// The Ed25519 key of the sequencer (a device or a relay).
    public let sequencer: DeviceID
    /// Milliseconds since the Unix epoch when the sequencer took the receipt.
    public let receivedAt: UInt64
    /// The exact payload bytes: a single envelope's signed payload, or a run item's payload (its
    /// `run` field holds the signed header).
    public let payload: [UInt8]
    /// The sequencer's 64-byte Ed25519 signature over `signedBytes`, with context
    /// `peerlog/envelope/v1`, or `peerlog/envelope-run/v1` for a run item.
    public let signature: [UInt8]
    /// The signed run header when this is an item of a batched run; nil for a single envelope.
    public let run: EnvelopeRun.Header?
    /// Sibling hashes from this seq's leaf up to `run.root` (empty for a single envelope).
    public let path: [[UInt8]]

    /// Signs a single envelope (docs/PROTOCOL.md §3.4) with `key`, whose public key becomes
    /// `sequencer`. Throws a `ModelError` when `seq` is 0 (seqs start at 1).
    public static func sign(
        group: GroupID, seq: UInt64, receipt: CID, term: UInt64, receivedAt: UInt64, key: Ed25519.PrivateKey
    ) throws -> Envelope {
        let payload = singlePayload(
            group: group, seq: seq, receipt: receipt, term: term, sequencer: key.publicKey.rawRepresentation,
            receivedAt: receivedAt)
        return try Envelope(
            payload: payload, signature: key.signature(for: SignatureContext.envelope.message(for: payload)))
    }

    /// A single envelope's payload (§3.4) in deterministic CBOR.
    static func singlePayload(
        group: GroupID, seq: UInt64, receipt: CID, term: UInt64, sequencer: [UInt8], receivedAt: UInt64
    ) -> [UInt8] {
        CBOREncoder.encode(
            .textMap([
                "v": 1,
                "group": .bytes(group.bytes),
                "seq": .unsigned(seq),
                "cid": receipt.cborLink,
                "term": .unsigned(term),
                "sequencer": .bytes(sequencer),
                "received_at": .unsigned(receivedAt),
            ]))
    }

    /// Parses a single envelope's or a run item's payload (a `run` field makes it an item) and
    /// checks its structure; `verify()` checks the signature. Throws a `ModelError` for a malformed
    /// payload, a seq outside its run, or a signature that is not 64 bytes.
    public init(payload: [UInt8], signature: [UInt8]) throws {
        let what = "envelope"
        let map = try Fields.decode(payload, what: what, decoder: Fields.payloadDecoder(maxBytes: Self.maxEncodedBytes))
        try Fields.requireSignatureLength(signature, of: "envelope")
        if map[.text("run")] != nil {
            try self.init(runItem: map, payload: payload, signature: signature)
        } else {
            try self.init(single: map, payload: payload, signature: signature)
        }
    }

    private init(single map: [CBOR: CBOR], payload: [UInt8], signature: [UInt8]) throws {
        let what = "envelope"
        run = nil
        path = []
        try Fields.requireKeys(map, ["v", "group", "seq", "cid", "term", "sequencer", "received_at"], what: what)
        try Fields.version(map, what: what)
        group = try GroupID(bytes: try Fields.bytes(map, "group", what: what, count: GroupID.length))
        seq = try Fields.uint(map, "seq", what: what)
        guard seq >= 1 else { throw ModelError(.fieldOutOfRange, "envelope.seq must be at least 1") }
        do { receipt = try CID(cborLink: map["cid"]!) } catch {
            throw ModelError(.wrongShape, "envelope.cid: \(error)")
        }
        term = try Fields.uint(map, "term", what: what)
        sequencer = try DeviceID(bytes: try Fields.bytes(map, "sequencer", what: what, count: 32))
        receivedAt = try Fields.uint(map, "received_at", what: what)
        self.payload = payload
        self.signature = signature
    }

    /// An item of a batched run (§3.5): the header gives group, term, sequencer and received_at.
    private init(runItem map: [CBOR: CBOR], payload: [UInt8], signature: [UInt8]) throws {
        let what = "envelope item"
        try Fields.requireKeys(map, ["v", "run", "seq", "cid", "path"], what: what)
        try Fields.version(map, what: what)
        let header = try Decoded.runHeaders.value(try Fields.bytes(map, "run", what: what))
        seq = try Fields.uint(map, "seq", what: what)
        guard seq >= header.firstSeq, seq - header.firstSeq < header.count else {
            throw ModelError(
                .fieldOutOfRange, "envelope item seq \(seq) is outside its run \(header.firstSeq)+\(header.count)")
        }
        do { receipt = try CID(cborLink: map[.text("cid")]!) } catch {
            throw ModelError(.wrongShape, "envelope item cid: \(error)")
        }
        guard let hashes = map[.text("path")]?.arrayValue, hashes.count <= 8 else {
            throw ModelError(.wrongShape, "envelope item path must be an array of at most 8 hashes")
        }
        path = try hashes.map { h in
            guard let b = h.bytesValue, b.count == 32 else {
                throw ModelError(.wrongShape, "envelope item path holds 32-byte hashes")
            }
            return b
        }
        group = header.group
        term = header.term
        sequencer = header.sequencer
        receivedAt = header.receivedAt
        run = header
        self.payload = payload
        self.signature = signature
    }

    /// The item of `seq` in the run `header` describes, made by its signer (`EnvelopeRun.sign`)
    /// or rebuilt by a store that kept the run once (a seq inside the run, its path from the
    /// run's tree, the header's signature): the value `init(payload:signature:)` gives for the
    /// item's payload, without parsing it back.
    package init(item header: EnvelopeRun.Header, seq: UInt64, receipt: CID, path: [[UInt8]], signature: [UInt8]) {
        (group, self.seq, self.receipt, term) = (header.group, seq, receipt, header.term)
        (sequencer, receivedAt, run, self.path) = (header.sequencer, header.receivedAt, header, path)
        payload = Self.itemPayload(run: header.payload, seq: seq, receipt: receipt, path: path)
        self.signature = signature
    }

    /// The payload of one seq's item in a run: `{"v": 1, "run", "seq", "cid", "path"}` in
    /// deterministic CBOR, written directly in its keys' order (§1: "v", "cid", "run", "seq",
    /// "path") because a sequencer signs, and a store rebuilds, one per seq. Tests hold it to
    /// `CBOREncoder`'s encoding of the same map.
    static func itemPayload(run header: [UInt8], seq: UInt64, receipt: CID, path: [[UInt8]]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(60 + header.count + 34 * path.count)
        out.append(contentsOf: [0xa5, 0x61, 0x76, 0x01])  // map(5), "v": 1
        out.append(contentsOf: [0x63, 0x63, 0x69, 0x64, 0xd8, 0x2a])  // "cid": tag 42
        CBOREncoder.appendHead(major: 2, argument: UInt64(receipt.bytes.count + 1), to: &out)
        out.append(0x00)
        out.append(contentsOf: receipt.bytes)
        out.append(contentsOf: [0x63, 0x72, 0x75, 0x6e])  // "run"
        CBOREncoder.appendHead(major: 2, argument: UInt64(header.count), to: &out)
        out.append(contentsOf: header)
        out.append(contentsOf: [0x63, 0x73, 0x65, 0x71])  // "seq"
        CBOREncoder.appendHead(major: 0, argument: seq, to: &out)
        out.append(contentsOf: [0x64, 0x70, 0x61, 0x74, 0x68])  // "path"
        CBOREncoder.appendHead(major: 4, argument: UInt64(path.count), to: &out)
        for hash in path {
            CBOREncoder.appendHead(major: 2, argument: UInt64(hash.count), to: &out)
            out.append(contentsOf: hash)
        }
        return out
    }

    /// Parses the container form. Throws a `ModelError` for a container over `maxEncodedBytes` or
    /// anything `init(payload:signature:)` refuses.
    public init(encoded: [UInt8]) throws {
        if let c = ContainerSplit(encoded, payloadKey: Self.payloadKey, maxBytes: Self.maxEncodedBytes) {
            try self.init(payload: c.payload, signature: c.signature)
            return
        }
        try self.init(decodingContainer: encoded)
    }
    private static let payloadKey = ContainerSplit.key("envelope")

    /// The general path of `init(encoded:)`, through the container's CBOR value: it accepts
    /// exactly the bytes `ContainerSplit` does and names what is wrong with the rest.
    package init(decodingContainer encoded: [UInt8]) throws {
        let c = try Fields.container(encoded, payloadKey: "envelope", maxBytes: Self.maxEncodedBytes)
        try self.init(payload: c.payload, signature: c.signature)
    }

    /// The container `{"envelope": bstr(payload), "sig": bstr(64)}` as a CBOR value
    /// (docs/PROTOCOL.md §3.4, §3.5).
    public var containerValue: CBOR { .textMap(["envelope": .bytes(payload), "sig": .bytes(signature)]) }
    /// The container's deterministic bytes, as stored and sent.
    public var encoded: [UInt8] { CBOREncoder.encode(containerValue) }

    /// Checks the sequencer's signature (and a run item's position). Whether that sequencer is
    /// the group's authority is the replica's question.
    public func verify() -> VerificationResult {
        if case .invalid(let why) = verifyPosition() { return .invalid(why) }
        return verifySignature()
    }

    /// The bytes the signature covers: the payload, or a run item's header. Items of one run
    /// share them, so a receiver checks the signature once per run.
    public var signedBytes: [UInt8] { run?.payload ?? payload }

    /// The signature alone (one Ed25519 verification, shared by a run's items).
    public func verifySignature() -> VerificationResult {
        let context: SignatureContext = run == nil ? .envelope : .envelopeRun
        return sequencer.publicKey.isValidSignature(signature, for: context.message(for: signedBytes))
            ? .valid : .invalid("envelope signature does not verify against sequencer \(sequencer.short)")
    }

    /// A run item's Merkle path to the signed root (a few SHA-256); always valid for a single envelope.
    public func verifyPosition() -> VerificationResult { checkPosition().result }

    /// `verifyPosition`, with a valid run item's leaf (§3.5): a store keeps a run's leaves once
    /// it holds every item (§10), and the leaves of items whose paths reached the signed root
    /// need no second check.
    public func checkPosition() -> (result: VerificationResult, leaf: [UInt8]?) {
        guard let run else { return (.valid, nil) }
        let leaf = EnvelopeRun.leafHash(seq: seq, receipt: receipt)
        guard EnvelopeRun.verifyPath(leaf: leaf, index: seq - run.firstSeq, size: run.count, path: path, root: run.root)
        else { return (.invalid("envelope item for seq \(seq) is not in its run's Merkle root"), nil) }
        return (.valid, leaf)
    }

    /// Whether this is a run item other than its run's last (more of the run follows it).
    package var continuesItsRun: Bool { run.map { seq < $0.firstSeq + $0.count - 1 } ?? false }

    /// Decoded payload, for display.
    public var payloadValue: CBOR { (try? CBORDecoder.decodeStrict(payload)) ?? .null }
}
