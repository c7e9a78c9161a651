import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

/// The guest's payload when linking (docs/PROTOCOL.md §20.6.1): the new device's keys and name, signed
/// by the new device's signing key over this exchange's transcript hash, so it proves the device holds
/// the key and cannot be replayed into another exchange.
public struct LinkRequest: Sendable {
    /// The new device: its Ed25519 signing key.
    public let device: DeviceID
    /// The new device's X25519 Noise static key.
    public let noiseKey: X25519.PublicKey
    /// The new device's name, 1...`DeviceCertificate.maxNameBytes` bytes of UTF-8.
    public let name: String
    /// The device key's signature over `"peerlog/pair-link/v1" ‖ 0x00 ‖ transcriptHash ‖ body`.
    public let signature: [UInt8]
    private let fields: [String: CBOR]

    private static let type = "link_request"

    private init(fields: [String: CBOR], device: DeviceID, noiseKey: X25519.PublicKey, name: String, signature: [UInt8])
    {
        self.fields = fields
        self.device = device
        self.noiseKey = noiseKey
        self.name = name
        self.signature = signature
    }

    /// A request for the device whose signing key is `signingKey`, signed over `transcriptHash` (the
    /// guest exchange's, after `readyForPayload`). Throws `badPayload` for a bad name or hash length.
    public static func make(
        signingKey: Ed25519.PrivateKey, noiseKey: X25519.PublicKey, name: String, transcriptHash: [UInt8]
    ) throws -> LinkRequest {
        try PayloadCodec.checkTranscriptHash(transcriptHash)
        guard !name.isEmpty, name.utf8.count <= DeviceCertificate.maxNameBytes else {
            throw PairingError(.badPayload, "device name must be 1...\(DeviceCertificate.maxNameBytes) bytes of UTF-8")
        }
        var f: [String: CBOR] = [
            "t": .text(type), "device": .bytes(signingKey.publicKey.rawRepresentation),
            "noise": .bytes(noiseKey.rawRepresentation), "name": .text(name),
        ]
        let sig = signingKey.signature(
            for: PayloadCodec.signedMessage(
                context: PairingContext.link, transcriptHash: transcriptHash, body: PayloadCodec.body(f)))
        f["sig"] = .bytes(sig)
        return LinkRequest(
            fields: f, device: DeviceID(publicKey: signingKey.publicKey), noiseKey: noiseKey, name: name, signature: sig
        )
    }

    /// The deterministic CBOR map `{t: "link_request", device, noise, name, sig}`.
    public var encoded: [UInt8] { CBOREncoder.encode(.textMap(fields)) }

    /// Decodes a request and checks its signature against this exchange's `transcriptHash`; throws
    /// `badPayload` otherwise.
    public init(decoding bytes: [UInt8], transcriptHash: [UInt8]) throws {
        try PayloadCodec.checkTranscriptHash(transcriptHash)
        let t = Self.type
        let f = try PayloadCodec.fields(bytes, type: t, keys: ["device", "noise", "name", "sig"])
        let device: DeviceID
        let noise: X25519.PublicKey
        do {
            device = try DeviceID(bytes: try PayloadCodec.bytes(f, "device", type: t, count: 32))
            noise = try X25519.PublicKey(try PayloadCodec.bytes(f, "noise", type: t, count: 32))
        } catch let e as PairingError { throw e } catch { throw PairingError(.badPayload, "\(t): \(error)") }
        let name = try PayloadCodec.text(f, "name", type: t, maxBytes: DeviceCertificate.maxNameBytes)
        try PayloadCodec.checkSignature(
            f, by: device.publicKey, context: PairingContext.link, th: transcriptHash, type: t)
        self.init(fields: f, device: device, noiseKey: noise, name: name, signature: f["sig"]!.bytesValue!)
    }
}

/// The host's payload when linking (docs/PROTOCOL.md §20.6.2): a certificate for the requested keys,
/// issued by the identity, optionally the identity key itself, and where the host's daemon listens.
///
/// It carries no signature of its own: it travels only inside the `pair_done` box, sealed with a key
/// derived from this exchange's ISK, which only a party that knew the code and took part in this exchange
/// has; the certificate inside is signed by the identity, and `th` ties the grant to the transcript.
public struct LinkGrant: Sendable {
    /// The new device's certificate, issued by the host's identity for exactly the requested keys.
    public let certificate: DeviceCertificate
    /// The identity key's 32-byte seed when the host shares the identity key (so the new device can link
    /// and revoke too); nil when it does not.
    public let identitySeed: SecureBytes?
    /// `HOST:PORT` addresses where the host's daemon listens.
    public let peers: [String]
    /// The host device.
    public let hostDevice: DeviceID
    private let transcriptHash: [UInt8]

    private static let type = "link_grant"

    private init(
        certificate: DeviceCertificate, identitySeed: SecureBytes?, peers: [String], hostDevice: DeviceID,
        transcriptHash: [UInt8]
    ) {
        self.certificate = certificate
        self.identitySeed = identitySeed
        self.peers = peers
        self.hostDevice = hostDevice
        self.transcriptHash = transcriptHash
    }

    /// Issues the certificate for `request` with `identityKey` (named `request.name`, created at
    /// `createdAt` ms since 1970) and includes the identity seed when `shareIdentity` is true. Throws
    /// `badPayload` for bad peers or hash length.
    public static func make(
        identityKey: Ed25519.PrivateKey, request: LinkRequest, shareIdentity: Bool, peers: [String],
        hostDevice: DeviceID, createdAt: UInt64, transcriptHash: [UInt8]
    ) throws -> LinkGrant {
        try PayloadCodec.checkTranscriptHash(transcriptHash)
        try PayloadCodec.checkPeers(peers)
        let certificate = try DeviceCertificate.issue(
            identityKey: identityKey, device: request.device, noiseKey: request.noiseKey, name: request.name,
            createdAt: createdAt)
        return LinkGrant(
            certificate: certificate, identitySeed: shareIdentity ? identityKey.seed : nil, peers: peers,
            hostDevice: hostDevice, transcriptHash: transcriptHash)
    }

    /// The deterministic CBOR map `{t: "link_grant", th, certificate, peers, host[, identity_seed]}`. It
    /// holds the identity seed when shared: seal it (`finish(hostPayload:)`) and zero it.
    public var encoded: [UInt8] {
        var f: [String: CBOR] = [
            "t": .text(Self.type), "th": .bytes(transcriptHash), "certificate": .bytes(certificate.encoded),
            "peers": .array(peers.map(CBOR.text)), "host": .bytes(hostDevice.bytes),
        ]
        if let identitySeed { f["identity_seed"] = .bytes(identitySeed.copyBytes()) }
        return CBOREncoder.encode(.textMap(f))
    }

    /// Decodes a grant and checks it answers `request` in this exchange: `th` equals `transcriptHash`,
    /// the certificate verifies and binds exactly the requested device and Noise keys, and a shared seed's
    /// public key is the certificate's identity. Throws `badPayload` otherwise.
    public init(decoding bytes: [UInt8], transcriptHash: [UInt8], expecting request: LinkRequest) throws {
        try PayloadCodec.checkTranscriptHash(transcriptHash)
        let t = Self.type
        let f = try PayloadCodec.fields(
            bytes, type: t, keys: ["th", "certificate", "peers", "host"], optional: ["identity_seed"])
        guard constantTimeEquals(try PayloadCodec.bytes(f, "th", type: t, count: 32), transcriptHash) else {
            throw PairingError(.badPayload, "\(t) belongs to another exchange")
        }
        let certificate = try PayloadCodec.certificate(f, type: t)
        guard certificate.device == request.device, certificate.noiseKey == request.noiseKey else {
            throw PairingError(.badPayload, "\(t).certificate is not for the requested device and Noise keys")
        }
        var seed: SecureBytes?
        if f["identity_seed"] != nil {
            var raw = try PayloadCodec.bytes(f, "identity_seed", type: t, count: Ed25519.seedLength)
            defer { SecureBytes.zero(&raw) }
            let secret = SecureBytes(raw)
            guard (try? Ed25519.PrivateKey(seed: secret))?.publicKey == certificate.identity.publicKey else {
                throw PairingError(.badPayload, "\(t).identity_seed is not the certificate's identity key")
            }
            seed = secret
        }
        let host: DeviceID
        do { host = try DeviceID(bytes: try PayloadCodec.bytes(f, "host", type: t, count: 32)) } catch let e
            as PairingError
        { throw e } catch { throw PairingError(.badPayload, "\(t).host: \(error)") }
        self.init(
            certificate: certificate, identitySeed: seed, peers: try PayloadCodec.peers(f, type: t), hostDevice: host,
            transcriptHash: transcriptHash)
    }
}
