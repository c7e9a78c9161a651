import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

/// Limits of the payloads exchanged inside a pairing (docs/PROTOCOL.md §20.6).
public enum PairingPayloadLimits {
    /// Most peer addresses a grant lists.
    public static let maxPeers = 16
    /// Longest peer address (`HOST:PORT`), in UTF-8 bytes.
    public static let maxPeerBytes = 255
    /// Longest group name, in UTF-8 bytes (as group state allows, docs/PROTOCOL.md §9.2).
    public static let maxGroupNameBytes = 128
    /// Longest role name, in UTF-8 bytes.
    public static let maxRoleBytes = 32
    /// Largest encoded payload.
    public static let maxPayloadBytes = 8192
}

/// The signature contexts of pairing payloads. They live here rather than in `SignatureContext`
/// because they sign transcript-bound payloads only this module reads.
enum PairingContext {
    /// Link payloads (the guest's `LinkRequest`).
    static let link = "peerlog/pair-link/v1"
    /// Invite payloads (`InviteRequest` and `InviteGrant`; their `t` keeps them apart).
    static let invite = "peerlog/pair-invite/v1"
}

/// Encoding helpers shared by the payloads: a deterministic CBOR map with a text `t`; signed payloads
/// add `sig`, an Ed25519 signature over `context ‖ 0x00 ‖ transcriptHash ‖ body`, where `body` is the
/// map without `sig`.
enum PayloadCodec {
    static func signedMessage(context: String, transcriptHash: [UInt8], body: [UInt8]) -> [UInt8] {
        Array(context.utf8) + [0] + transcriptHash + body
    }

    static func checkTranscriptHash(_ th: [UInt8]) throws {
        guard th.count == 32 else { throw PairingError(.badPayload, "a transcript hash is 32 bytes") }
    }

    /// The fields of a payload of type `type` having exactly `keys` (plus `t`).
    static func fields(
        _ bytes: [UInt8], type: String, keys: Set<String>, optional: Set<String> = []
    ) throws
        -> [String: CBOR]
    {
        let out = try textKeyedMap(
            bytes,
            limits: .init(
                maxDepth: 3, maxStringBytes: PairingPayloadLimits.maxPayloadBytes, maxCollectionCount: 32,
                maxInputBytes: PairingPayloadLimits.maxPayloadBytes),
            code: .badPayload, what: type)
        guard out["t"]?.textValue == type else { throw PairingError(.badPayload, "payload is not a \(type)") }
        let present = Set(out.keys).subtracting(["t"])
        guard keys.isSubset(of: present), present.isSubset(of: keys.union(optional)) else {
            throw PairingError(.badPayload, "\(type) must have the keys \(keys.union(["t"]).sorted())")
        }
        return out
    }

    static func bytes(_ f: [String: CBOR], _ key: String, type: String, count: Int? = nil) throws -> [UInt8] {
        guard let b = f[key]?.bytesValue, count == nil || b.count == count else {
            throw PairingError(.badPayload, "\(type).\(key) must be \(count.map { "\($0) bytes" } ?? "a byte string")")
        }
        return b
    }

    static func text(_ f: [String: CBOR], _ key: String, type: String, maxBytes: Int) throws -> String {
        guard let t = f[key]?.textValue, !t.isEmpty, t.utf8.count <= maxBytes else {
            throw PairingError(.badPayload, "\(type).\(key) must be 1...\(maxBytes) bytes of text")
        }
        return t
    }

    static func checkPeers(_ peers: [String]) throws {
        guard peers.count <= PairingPayloadLimits.maxPeers,
            peers.allSatisfy({ !$0.isEmpty && $0.utf8.count <= PairingPayloadLimits.maxPeerBytes })
        else {
            throw PairingError(
                .badPayload,
                "at most \(PairingPayloadLimits.maxPeers) peer addresses of 1...\(PairingPayloadLimits.maxPeerBytes) bytes"
            )
        }
    }

    static func peers(_ f: [String: CBOR], type: String) throws -> [String] {
        guard let items = f["peers"]?.arrayValue else {
            throw PairingError(.badPayload, "\(type).peers must be an array")
        }
        let peers = try items.map { item in
            guard let t = item.textValue else { throw PairingError(.badPayload, "\(type).peers must hold text") }
            return t
        }
        try checkPeers(peers)
        return peers
    }

    static func certificate(_ f: [String: CBOR], type: String) throws -> DeviceCertificate {
        let cert: DeviceCertificate
        do { cert = try DeviceCertificate(encoded: try bytes(f, "certificate", type: type)) } catch let e
            as PairingError
        {
            throw e
        } catch {
            throw PairingError(.badPayload, "\(type).certificate: \(error)")
        }
        guard cert.verify().isValid else {
            throw PairingError(.badPayload, "\(type).certificate is not signed by its identity")
        }
        return cert
    }

    /// The map without `sig`, re-encoded: strict decoding guarantees these are the bytes that were signed.
    static func body(_ f: [String: CBOR]) -> [UInt8] { CBOREncoder.encode(.textMap(f.filter { $0.key != "sig" })) }

    static func checkSignature(
        _ f: [String: CBOR], by key: Ed25519.PublicKey, context: String, th: [UInt8], type: String
    )
        throws
    {
        let sig = try bytes(f, "sig", type: type, count: Ed25519.signatureLength)
        guard key.isValidSignature(sig, for: signedMessage(context: context, transcriptHash: th, body: body(f))) else {
            throw PairingError(.badPayload, "\(type) signature does not verify for this exchange")
        }
    }
}
