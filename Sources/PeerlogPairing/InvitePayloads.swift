import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

/// The guest's payload when joining a group by code (docs/PROTOCOL.md §20.6.3): its device certificate
/// and the device key's signature over this exchange's transcript hash, proving it holds the device.
public struct InviteRequest: Sendable {
    /// The guest's device certificate (it names the identity the host will add to the group).
    public let certificate: DeviceCertificate
    /// The device key's signature over `"peerlog/pair-invite/v1" ‖ 0x00 ‖ transcriptHash ‖ body`.
    public let signature: [UInt8]
    private let fields: [String: CBOR]

    private static let type = "invite_request"

    private init(certificate: DeviceCertificate, signature: [UInt8], fields: [String: CBOR]) {
        self.certificate = certificate
        self.signature = signature
        self.fields = fields
    }

    /// A request signed by `signingKey`, which must be `certificate`'s device key. Throws `badPayload`
    /// otherwise or for a bad hash length.
    public static func make(
        certificate: DeviceCertificate, signingKey: Ed25519.PrivateKey, transcriptHash: [UInt8]
    )
        throws -> InviteRequest
    {
        try PayloadCodec.checkTranscriptHash(transcriptHash)
        guard signingKey.publicKey == certificate.device.publicKey else {
            throw PairingError(.badPayload, "the signing key is not the certificate's device key")
        }
        var f: [String: CBOR] = ["t": .text(type), "certificate": .bytes(certificate.encoded)]
        let sig = signingKey.signature(
            for: PayloadCodec.signedMessage(
                context: PairingContext.invite, transcriptHash: transcriptHash, body: PayloadCodec.body(f)))
        f["sig"] = .bytes(sig)
        return InviteRequest(certificate: certificate, signature: sig, fields: f)
    }

    /// The deterministic CBOR map `{t: "invite_request", certificate, sig}`.
    public var encoded: [UInt8] { CBOREncoder.encode(.textMap(fields)) }

    /// Decodes a request, verifies the certificate and the device's signature over `transcriptHash`;
    /// throws `badPayload` otherwise.
    public init(decoding bytes: [UInt8], transcriptHash: [UInt8]) throws {
        try PayloadCodec.checkTranscriptHash(transcriptHash)
        let t = Self.type
        let f = try PayloadCodec.fields(bytes, type: t, keys: ["certificate", "sig"])
        let certificate = try PayloadCodec.certificate(f, type: t)
        try PayloadCodec.checkSignature(
            f, by: certificate.device.publicKey, context: PairingContext.invite, th: transcriptHash, type: t)
        self.init(certificate: certificate, signature: f["sig"]!.bytesValue!, fields: f)
    }
}

/// The host's payload when inviting by code (docs/PROTOCOL.md §20.6.4): which group, under which role,
/// where the host listens, and the host's device certificate, signed by the host device over this
/// exchange's transcript hash.
public struct InviteGrant: Sendable {
    /// The host's device certificate.
    public let certificate: DeviceCertificate
    /// The group the guest's identity is added to.
    public let group: GroupID
    /// The group's name, 1...`PairingPayloadLimits.maxGroupNameBytes` bytes.
    public let groupName: String
    /// The role given, 1...`PairingPayloadLimits.maxRoleBytes` bytes (e.g. `writer`).
    public let role: String
    /// `HOST:PORT` addresses where the host's daemon listens.
    public let peers: [String]
    /// The host device's signature over `"peerlog/pair-invite/v1" ‖ 0x00 ‖ transcriptHash ‖ body`.
    public let signature: [UInt8]
    private let fields: [String: CBOR]

    private static let type = "invite_grant"

    private init(
        certificate: DeviceCertificate, group: GroupID, groupName: String, role: String, peers: [String],
        signature: [UInt8], fields: [String: CBOR]
    ) {
        self.certificate = certificate
        self.group = group
        self.groupName = groupName
        self.role = role
        self.peers = peers
        self.signature = signature
        self.fields = fields
    }

    /// A grant signed by `signingKey`, which must be `certificate`'s device key. Throws `badPayload` for a
    /// wrong key, out-of-range name, role or peers, or a bad hash length.
    public static func make(
        certificate: DeviceCertificate, signingKey: Ed25519.PrivateKey, group: GroupID, groupName: String,
        role: String, peers: [String], transcriptHash: [UInt8]
    ) throws -> InviteGrant {
        try PayloadCodec.checkTranscriptHash(transcriptHash)
        try PayloadCodec.checkPeers(peers)
        guard signingKey.publicKey == certificate.device.publicKey else {
            throw PairingError(.badPayload, "the signing key is not the certificate's device key")
        }
        guard !groupName.isEmpty, groupName.utf8.count <= PairingPayloadLimits.maxGroupNameBytes,
            !role.isEmpty, role.utf8.count <= PairingPayloadLimits.maxRoleBytes
        else {
            throw PairingError(.badPayload, "group name or role out of range")
        }
        var f: [String: CBOR] = [
            "t": .text(type), "certificate": .bytes(certificate.encoded), "group": .bytes(group.bytes),
            "group_name": .text(groupName), "role": .text(role), "peers": .array(peers.map(CBOR.text)),
        ]
        let sig = signingKey.signature(
            for: PayloadCodec.signedMessage(
                context: PairingContext.invite, transcriptHash: transcriptHash, body: PayloadCodec.body(f)))
        f["sig"] = .bytes(sig)
        return InviteGrant(
            certificate: certificate, group: group, groupName: groupName, role: role, peers: peers, signature: sig,
            fields: f)
    }

    /// The deterministic CBOR map `{t: "invite_grant", certificate, group, group_name, role, peers, sig}`.
    public var encoded: [UInt8] { CBOREncoder.encode(.textMap(fields)) }

    /// Decodes a grant, verifies the certificate and the host device's signature over `transcriptHash`;
    /// throws `badPayload` otherwise.
    public init(decoding bytes: [UInt8], transcriptHash: [UInt8]) throws {
        try PayloadCodec.checkTranscriptHash(transcriptHash)
        let t = Self.type
        let f = try PayloadCodec.fields(
            bytes, type: t, keys: ["certificate", "group", "group_name", "role", "peers", "sig"])
        let certificate = try PayloadCodec.certificate(f, type: t)
        let group: GroupID
        do { group = try GroupID(bytes: try PayloadCodec.bytes(f, "group", type: t, count: GroupID.length)) } catch let
            e
            as PairingError
        { throw e } catch { throw PairingError(.badPayload, "\(t).group: \(error)") }
        let groupName = try PayloadCodec.text(
            f, "group_name", type: t, maxBytes: PairingPayloadLimits.maxGroupNameBytes)
        let role = try PayloadCodec.text(f, "role", type: t, maxBytes: PairingPayloadLimits.maxRoleBytes)
        let peers = try PayloadCodec.peers(f, type: t)
        try PayloadCodec.checkSignature(
            f, by: certificate.device.publicKey, context: PairingContext.invite, th: transcriptHash, type: t)
        self.init(
            certificate: certificate, group: group, groupName: groupName, role: role, peers: peers,
            signature: f["sig"]!.bytesValue!, fields: f)
    }
}
