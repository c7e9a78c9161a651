import PeerlogCrypto
import PeerlogEncoding

/// What each side sends in its handshake message (docs/PROTOCOL.md §14.3): its device certificate
/// and the device key's signature over the identity and Noise static key the certificate names.
///
/// The certificate shows that the identity vouched for the device id; the Noise handshake shows
/// that the peer holds the Noise key; only the proof shows that the device key agrees. Without it
/// an identity could present a certificate naming another device's id with its own Noise key,
/// and be taken for that device (a relay, a voter, a duplicate connection).
public struct HandshakePayload: Sendable, Equatable {
    /// The encoded form is at most this long (a 512-byte certificate container and the proof).
    public static let maxEncodedBytes = 593
    /// The device certificate's container bytes (§3.1).
    public let certificate: [UInt8]
    /// 64 bytes: the device key's signature (§3, context `peerlog/device-noise/v1`) over the
    /// identity's 32 bytes ‖ the Noise static key's 32 bytes.
    public let proof: [UInt8]

    /// The payload `device` presents: its certificate and a fresh proof.
    public init(device: LocalDevice) {
        certificate = device.certificate.encoded
        proof = device.signingKey.signature(for: Self.provenBytes(device.certificate))
    }

    /// A payload of these parts, checked by nobody yet (tests build wrong ones).
    public init(certificate: [UInt8], proof: [UInt8]) {
        self.certificate = certificate
        self.proof = proof
    }

    /// Parses `{"cert": bstr, "proof": bstr(64)}` strictly (deterministic CBOR, exactly those
    /// fields); throws a `ModelError`.
    public init(encoded: [UInt8]) throws {
        guard encoded.count <= Self.maxEncodedBytes else {
            throw ModelError(
                .sizeLimitExceeded, "handshake payload is \(encoded.count) bytes, limit \(Self.maxEncodedBytes)")
        }
        let what = "handshake payload"
        let map = try Fields.decode(encoded, what: what, decoder: Fields.payloadDecoder(maxBytes: Self.maxEncodedBytes))
        if map[.text("certificate")] != nil && map[.text("sig")] != nil && map.count == 2 {
            throw ModelError(
                .wrongShape,
                "a bare certificate without the device key's proof (sent by a version before the proof, PROTOCOL.md §14.3)"
            )
        }
        try Fields.requireKeys(map, ["cert", "proof"], what: what)
        certificate = try Fields.bytes(map, "cert", what: what)
        proof = try Fields.bytes(map, "proof", what: what, count: Ed25519.signatureLength)
    }

    /// `{"cert": bstr, "proof": bstr(64)}`, deterministic.
    public var encoded: [UInt8] { CBOREncoder.encode(.textMap(["cert": .bytes(certificate), "proof": .bytes(proof)])) }

    /// Whether `proof` is the signature of `certificate`'s device key over its identity and
    /// Noise key (the certificate's own signature is checked apart: `DeviceCertificate.verify()`).
    public func proves(_ certificate: DeviceCertificate) -> Bool {
        certificate.device.publicKey.isValidSignature(proof, for: Self.provenBytes(certificate))
    }

    static func provenBytes(_ c: DeviceCertificate) -> [UInt8] {
        SignatureContext.deviceNoise.message(for: c.identity.bytes + c.noiseKey.rawRepresentation)
    }
}
