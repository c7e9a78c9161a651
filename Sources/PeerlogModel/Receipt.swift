import PeerlogCrypto
import PeerlogEncoding

/// A receipt: what an author signs. Content-addressed by the CID of its exact payload bytes.
///
/// Payload (docs/PROTOCOL.md §Receipt): `{"v": 1, "group", "type", "author", "identity",
/// "counter", "parents", "hlc", "body"}`. Wire form: `{"receipt": bstr(payload), "sig": bstr(64),
/// "certificate": <certificate container>}`. No sequencer metadata: the author cannot know it.
public struct Receipt: Hashable, Sendable {
    /// Largest payload accepted (64 KiB).
    public static let maxPayloadBytes = 65_536
    /// Largest container accepted: payload, signature, certificate and CBOR overhead.
    public static let maxEncodedBytes = maxPayloadBytes + 1_024
    /// Most causal parents one receipt may name.
    public static let maxParents = 32
    /// Longest receipt type, in bytes.
    public static let maxTypeBytes = 64
    /// Deepest nesting inside the body: the body's own map or array and at most this many levels
    /// of arrays, maps and tags inside it (the value of an `entity.put` body nests at most this many levels itself).
    public static let maxBodyDepth = 16

    /// Throws a `ModelError` when `body` nests deeper than ``maxBodyDepth`` allows. Checked
    /// before signing and, in an encrypted group, before sealing (docs/PROTOCOL.md §3.3, §22.3),
    /// so a body every receiver would refuse is never written: the same limit for both kinds.
    public static func checkBodyDepth(_ body: CBOR) throws {
        func depth(_ v: CBOR) -> Int {
            switch v {
            case .array(let items): 1 + (items.map(depth).max() ?? 0)
            case .map(let entries): 1 + (entries.map { max(depth($0.key), depth($0.value)) }.max() ?? 0)
            case .tagged(_, let inner): 1 + depth(inner)
            default: 0
            }
        }
        let levels = depth(body)
        guard levels <= maxBodyDepth + 1 else {
            throw ModelError(
                .fieldOutOfRange,
                "the body nests \(levels) levels deep, over the limit of \(maxBodyDepth + 1) (a value inside it at most \(maxBodyDepth)); flatten the value"
            )
        }
    }

    /// The fields an author fills in.
    public struct Draft: Sendable {
        /// The group the receipt belongs to.
        public var group: GroupID
        /// Receipt type, e.g. `entity.put`: 1...`Receipt.maxTypeBytes` bytes matching
        /// `[a-z][a-z0-9_.-]*` (docs/PROTOCOL.md §3.2); `Receipt.sign` refuses anything else.
        public var type: String
        /// This device's counter in the group: 1, 2, 3 …; `Receipt.sign` refuses 0.
        public var counter: UInt64
        /// CIDs of the heads the author has seen, at most `Receipt.maxParents`; signing drops
        /// duplicates and sorts them.
        public var parents: [CID]
        /// The author's HLC time for this receipt (docs/PROTOCOL.md §5).
        public var hlc: HLCTimestamp
        /// Type-specific content, within the receipt profile (docs/PROTOCOL.md §3.3): text map keys,
        /// no floats, no tags but CID links, nesting within its depth limit.
        public var body: CBOR

        /// A draft; `parents` defaults to none.
        public init(group: GroupID, type: String, counter: UInt64, parents: [CID] = [], hlc: HLCTimestamp, body: CBOR) {
            self.group = group
            self.type = type
            self.counter = counter
            self.parents = parents
            self.hlc = hlc
            self.body = body
        }
    }

    /// The parsed receipt, shared by every copy. Receipts are passed and kept by value (batches,
    /// the verification stage, memos); as a struct of a dozen arrays each copy retained every one
    /// of them, a tenth of a catch-up's CPU in copies and their releases.
    private final class Parsed: Sendable {
        let group: GroupID
        let type: String
        let author: DeviceID
        let identity: IdentityID
        let counter: UInt64
        let parents: [CID]
        let hlc: HLCTimestamp
        let body: CBOR
        let certificate: DeviceCertificate
        let payload: [UInt8]
        let signature: [UInt8]
        let cid: CID

        init(
            group: GroupID, type: String, author: DeviceID, identity: IdentityID, counter: UInt64, parents: [CID],
            hlc: HLCTimestamp, body: CBOR, certificate: DeviceCertificate, payload: [UInt8], signature: [UInt8]
        ) {
            self.group = group
            self.type = type
            self.author = author
            self.identity = identity
            self.counter = counter
            self.parents = parents
            self.hlc = hlc
            self.body = body
            self.certificate = certificate
            self.payload = payload
            self.signature = signature
            cid = CID(hashing: payload)
        }
    }

    private let parsed: Parsed

    /// The group id (payload `group`).
    public var group: GroupID { parsed.group }
    /// Receipt type, 1...`maxTypeBytes` bytes matching `[a-z][a-z0-9_.-]*` (payload `type`).
    public var type: String { parsed.type }
    /// The signing device (payload `author`); equals `certificate.device`.
    public var author: DeviceID { parsed.author }
    /// The author device's identity (payload `identity`); equals `certificate.identity`.
    public var identity: IdentityID { parsed.identity }
    /// The author's counter in this group, at least 1 (payload `counter`).
    public var counter: UInt64 { parsed.counter }
    /// Sorted ascending by binary CID, no duplicates.
    public var parents: [CID] { parsed.parents }
    /// The author's hybrid logical clock time (payload `hlc`, docs/PROTOCOL.md §5).
    public var hlc: HLCTimestamp { parsed.hlc }
    /// Type-specific content (payload `body`), within the receipt profile (docs/PROTOCOL.md §3.3).
    public var body: CBOR { parsed.body }
    /// The author's device certificate, carried in the container. `init` checks that it names
    /// `author` and `identity`; `verify` checks its signature.
    public var certificate: DeviceCertificate { parsed.certificate }
    /// The exact signed payload bytes, at most `maxPayloadBytes`; `cid` hashes them.
    public var payload: [UInt8] { parsed.payload }
    /// The author's 64-byte Ed25519 signature over `peerlog/receipt/v1` ‖ 0x00 ‖ `payload`.
    public var signature: [UInt8] { parsed.signature }
    /// CIDv1 of `payload`.
    public var cid: CID { parsed.cid }

    /// Equal when the signed bytes are: every other field is read from them.
    public static func == (a: Receipt, b: Receipt) -> Bool {
        a.parsed === b.parsed
            || (a.payload == b.payload && a.signature == b.signature && a.certificate == b.certificate)
    }

    /// Hashes the CID, the payload's own hash: equal receipts have equal payloads. (The
    /// signature's bytes would reach the hasher one at a time, 64 calls for nothing.)
    public func hash(into hasher: inout Hasher) { hasher.combine(cid) }

    /// Signs a draft as `device`.
    public static func sign(
        _ draft: Draft, signingKey: Ed25519.PrivateKey, certificate: DeviceCertificate
    ) throws -> Receipt {
        try sign(
            payload: payload(of: draft, certificate: certificate), signingKey: signingKey, certificate: certificate)
    }

    /// Signs a payload made by `payload(of:certificate:)`.
    public static func sign(
        payload: [UInt8], signingKey: Ed25519.PrivateKey, certificate: DeviceCertificate
    ) throws -> Receipt {
        guard signingKey.publicKey == certificate.device.publicKey else {
            throw ModelError(.certificateMismatch, "signing key is not the certificate's device key")
        }
        let sig = signingKey.signature(for: SignatureContext.receipt.message(for: payload))
        return try Receipt(payload: payload, signature: sig, certificate: certificate)
    }

    /// The payload `draft` signs to as `certificate`'s device. Its CID (`CID(hashing:)`) is the
    /// receipt's, known before signing: a batch chains receipts by it and signs them in parallel.
    public static func payload(of draft: Draft, certificate: DeviceCertificate) throws -> [UInt8] {
        try checkBodyDepth(draft.body)
        let parents = Array(Set(draft.parents)).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        // The deterministic encoding of the map of nine fields (§3.1), written field by field in
        // its key order, as a stored form is put back together (§10).
        let payload = payload(
            columns: StoredColumns(
                hlc: draft.hlc.packed, type: draft.type, group: draft.group.bytes, author: certificate.device.bytes,
                counter: draft.counter, identity: certificate.identity.bytes),
            parents: parents, body: CBOREncoder.encode(draft.body))
        // Checked before signing, with what to do instead: this is where a local write that is
        // too large stops (the CLI's `put`, an app's append).
        guard payload.count <= maxPayloadBytes else {
            throw ModelError(
                .sizeLimitExceeded,
                "the receipt payload would be \(payload.count) bytes, over the limit of \(maxPayloadBytes) bytes (64 KiB); "
                    + "split the value over several keys, or store it as a blob (any size: `peerlog put --value-file FILE`, `Peerlog.put(_:file:in:)`) and put a reference to it"
            )
        }
        return payload
    }

    /// Parses and checks the structure; the signature is checked by `verify()`.
    public init(payload: [UInt8], signature: [UInt8], certificate: DeviceCertificate) throws {
        let what = "receipt"
        guard payload.count <= Self.maxPayloadBytes else {
            throw ModelError(
                .sizeLimitExceeded, "receipt payload is \(payload.count) bytes, limit \(Self.maxPayloadBytes)")
        }
        let map = try Fields.decode(payload, what: what, decoder: Fields.payloadDecoder(maxBytes: Self.maxPayloadBytes))
        try Fields.requireKeys(
            map, ["v", "group", "type", "author", "identity", "counter", "parents", "hlc", "body"], what: what)
        try Fields.version(map, what: what)
        let group = try GroupID(bytes: try Fields.bytes(map, "group", what: what, count: GroupID.length))
        let type = try Fields.text(map, "type", what: what, maxBytes: Self.maxTypeBytes)
        guard Self.isValidType(type) else {
            throw ModelError(.fieldOutOfRange, "receipt.type \"\(type)\" must match [a-z][a-z0-9_.-]*")
        }
        let author = try DeviceID(bytes: try Fields.bytes(map, "author", what: what, count: 32))
        let identity = try IdentityID(bytes: try Fields.bytes(map, "identity", what: what, count: 32))
        let counter = try Fields.uint(map, "counter", what: what)
        guard counter >= 1 else { throw ModelError(.fieldOutOfRange, "receipt.counter must be at least 1") }
        guard let links = map["parents"]?.arrayValue else {
            throw ModelError(.wrongShape, "receipt.parents must be an array")
        }
        guard links.count <= Self.maxParents else {
            throw ModelError(.sizeLimitExceeded, "receipt has \(links.count) parents, limit \(Self.maxParents)")
        }
        var parents = [CID]()
        for link in links {
            do { parents.append(try CID(cborLink: link)) } catch {
                throw ModelError(.wrongShape, "receipt.parents holds an invalid CID link: \(error)")
            }
        }
        for (a, b) in zip(parents, parents.dropFirst()) where !a.bytes.lexicographicallyPrecedes(b.bytes) {
            throw ModelError(.wrongShape, "receipt.parents must be sorted and unique")
        }
        let packed = try Fields.uint(map, "hlc", what: what)
        guard packed >> 16 <= HLCTimestamp.maxPhysical else {
            throw ModelError(.fieldOutOfRange, "receipt.hlc out of range")
        }
        let hlc = HLCTimestamp(packed: packed)
        let body = map["body"]!
        try ReceiptProfile.check(body, path: "receipt.body")
        try Fields.requireSignatureLength(signature, of: "receipt")
        guard certificate.device == author else {
            throw ModelError(
                .certificateMismatch, "certificate is for device \(certificate.device), receipt names author \(author)")
        }
        guard certificate.identity == identity else {
            throw ModelError(
                .certificateMismatch,
                "certificate is for identity \(certificate.identity), receipt names identity \(identity)")
        }
        parsed = Parsed(
            group: group, type: type, author: author, identity: identity, counter: counter, parents: parents, hlc: hlc,
            body: body, certificate: certificate, payload: payload, signature: signature)
    }

    /// Parses the container form (a `.receipt` file, a sync batch entry).
    public init(encoded: [UInt8]) throws {
        // Every receipt of a device carries the same certificate: decoded once, kept by its bytes.
        if let c = ContainerSplit(
            encoded, payloadKey: Self.payloadKey, trailingKey: Self.certificateKey, maxBytes: Self.maxEncodedBytes),
            let certificate = try? Decoded.certificates.value(c.trailing)
        {
            try self.init(payload: c.payload, signature: c.signature, certificate: certificate)
            return
        }
        try self.init(decodingContainer: encoded)
    }
    private static let payloadKey = ContainerSplit.key("receipt")
    private static let certificateKey = ContainerSplit.key("certificate")

    /// The general path of `init(encoded:)`: through the container's CBOR value, naming what is
    /// wrong. It accepts exactly the bytes the split does (tests hold the two together).
    package init(decodingContainer encoded: [UInt8]) throws {
        let c = try Fields.container(
            encoded, payloadKey: "receipt", extraKeys: ["certificate"], maxBytes: Self.maxEncodedBytes)
        guard let certValue = c.map["certificate"] else {
            throw ModelError(.wrongShape, "receipt container lacks its certificate")
        }
        let certificate = try Decoded.certificates.value(CBOREncoder.encode(certValue))
        try self.init(payload: c.payload, signature: c.signature, certificate: certificate)
    }

    /// The container `{"receipt": bstr(payload), "sig": bstr(64), "certificate": <certificate
    /// container>}` as a CBOR value (docs/PROTOCOL.md §3.2).
    public var containerValue: CBOR {
        .textMap(["receipt": .bytes(payload), "sig": .bytes(signature), "certificate": certificate.containerValue])
    }
    /// The container's deterministic bytes, as `init(encoded:)` reads them.
    public var encoded: [UInt8] { CBOREncoder.encode(containerValue) }

    /// Verifies the certificate chain (identity signed the device) and the author's signature.
    /// `certificateVerified` lets a replica skip the identity signature of a certificate it has
    /// already checked (certificates repeat on every receipt of a device).
    public func verify(certificateVerified: Bool = false) -> VerificationResult {
        if !certificateVerified, case .invalid(let why) = certificate.verify() { return .invalid(why) }
        guard author.publicKey.isValidSignature(signature, for: SignatureContext.receipt.message(for: payload)) else {
            return .invalid("receipt signature does not verify against author device \(author.short)")
        }
        return .valid
    }

    /// Decoded payload, for display.
    public var payloadValue: CBOR {
        (try? Fields.payloadDecoder(maxBytes: Self.maxPayloadBytes).decode(payload)) ?? .null
    }

    static func isValidType(_ t: String) -> Bool {
        let u = Array(t.utf8)
        guard let first = u.first, (0x61...0x7a).contains(first) else { return false }
        return u.allSatisfy {
            (0x61...0x7a).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2e || $0 == 0x5f || $0 == 0x2d
        }
    }
}

/// What may appear inside a receipt: the dag-cbor-compatible subset of CBOR, so that the
/// 0x71 codec in the CID is honest. Text map keys only; no floats; no tags except 42 (links);
/// no simple values other than false, true and null.
enum ReceiptProfile {
    static func check(_ value: CBOR, path: String) throws {
        switch value {
        case .unsigned, .negative, .bytes, .text, .bool, .null: return
        case .array(let items):
            for (i, item) in items.enumerated() { try check(item, path: "\(path)[\(i)]") }
        case .map(let entries):
            for (k, v) in entries {
                guard let key = k.textValue else { throw ModelError(.wrongShape, "\(path) has a non-text map key") }
                try check(v, path: "\(path).\(key)")
            }
        case .tagged(CID.cborLinkTag, let inner):
            do { _ = try CID(cborLink: .tagged(CID.cborLinkTag, inner)) } catch {
                throw ModelError(.wrongShape, "\(path): invalid CID link: \(error)")
            }
        case .tagged(let tag, _):
            throw ModelError(.wrongShape, "\(path): tag \(tag) is not allowed (only 42, CID links)")
        case .float: throw ModelError(.wrongShape, "\(path): floating-point values are not allowed in receipts")
        case .undefined, .simple:
            throw ModelError(.wrongShape, "\(path): only false, true and null simple values are allowed")
        }
    }
}
