import PeerlogCrypto
import PeerlogEncoding

/// An epoch key sealed to one device (docs/PROTOCOL.md §22.2): only the holder of the device's
/// X25519 key (the `noise` key its certificate names) can open it.
///
/// Encoded `{"device": bstr(32), "epk": bstr(32), "box": bstr(48)}`. The sealer draws a fresh
/// X25519 key pair `(e, epk)`; `wrap = BLAKE2b-256(key: X25519(e, noise), message:
/// "peerlog/seal-epoch-key/v1" ‖ epk ‖ noise)`; `box` = XChaCha20-Poly1305(wrap, nonce 24 zero
/// bytes, the 32-byte epoch key, associated data CBOR `["peerlog/epoch-key/v1", group, key id,
/// device]`). The zero nonce is safe: every wrap key is fresh and seals one message.
public struct SealedEpochKey: Hashable, Sendable {
    /// Length of `box`: the 32-byte key and the 16-byte tag.
    public static let boxLength = EpochKey.length + XChaChaPoly.tagLength
    static let wrapLabel = Array("peerlog/seal-epoch-key/v1".utf8)
    static let adLabel = "peerlog/epoch-key/v1"

    /// The device that can open it.
    public let device: DeviceID
    /// The sealer's ephemeral X25519 public key.
    public let ephemeral: [UInt8]
    /// The sealed key and its tag.
    public let box: [UInt8]

    /// Seals `key` of `group` to `device`, whose certificate names `noiseKey`.
    public static func seal(
        _ key: EpochKey, group: GroupID, to device: DeviceID, noiseKey: X25519.PublicKey
    ) throws -> SealedEpochKey {
        let e = X25519.PrivateKey()
        let wrap = try wrapKey(
            shared: e.sharedSecret(with: noiseKey), ephemeral: e.publicKey.rawRepresentation, recipient: noiseKey)
        let box = try key.secret.withUnsafeBytes {
            try XChaChaPoly.seal(
                Array($0), key: wrap, nonce: zeroNonce,
                authenticating: associatedData(group: group, keyID: key.id, device: device))
        }
        return try SealedEpochKey(device: device, ephemeral: e.publicKey.rawRepresentation, box: box)
    }

    /// Opens the box with the device's X25519 key; the result must be the key named `keyID`.
    /// Throws a `ModelError` (`wrongShape`) when it was not sealed to this key for this group and
    /// id, and when it opens to another key than `keyID` names.
    public func open(group: GroupID, keyID: EpochKeyID, with noiseKey: X25519.PrivateKey) throws -> EpochKey {
        let opened: [UInt8]
        do {
            let wrap = try Self.wrapKey(
                shared: noiseKey.sharedSecret(with: X25519.PublicKey(ephemeral)), ephemeral: ephemeral,
                recipient: noiseKey.publicKey)
            opened = try XChaChaPoly.open(
                box, key: wrap, nonce: Self.zeroNonce,
                authenticating: Self.associatedData(group: group, keyID: keyID, device: device))
        } catch {
            throw ModelError(.wrongShape, "sealed epoch key \(keyID) does not open for device \(device.short)")
        }
        let secret = SecureBytes(opened)
        var scratch = opened
        SecureBytes.zero(&scratch)
        let key = try EpochKey(secret: secret)
        guard key.id == keyID else {
            throw ModelError(.wrongShape, "sealed epoch key opens to \(key.id), not \(keyID)")
        }
        return key
    }

    /// Wraps decoded fields; throws a `ModelError` when a length is wrong.
    public init(device: DeviceID, ephemeral: [UInt8], box: [UInt8]) throws {
        guard ephemeral.count == X25519.keyLength, box.count == Self.boxLength else {
            throw ModelError(
                .fieldOutOfRange,
                "sealed epoch key: epk must be \(X25519.keyLength) bytes and box \(Self.boxLength), got \(ephemeral.count) and \(box.count)"
            )
        }
        self.device = device
        self.ephemeral = ephemeral
        self.box = box
    }

    /// Parses `{"device", "epk", "box"}`.
    public init(cbor: CBOR) throws {
        let what = "sealed epoch key"
        let map = try Fields.exactMap(cbor, ["device", "epk", "box"], what: what)
        try self.init(
            device: DeviceID(bytes: Fields.bytes(map, "device", what: what, count: 32)),
            ephemeral: Fields.bytes(map, "epk", what: what), box: Fields.bytes(map, "box", what: what))
    }

    /// The encoded map.
    public var cbor: CBOR { .textMap(["device": .bytes(device.bytes), "epk": .bytes(ephemeral), "box": .bytes(box)]) }

    static let zeroNonce = [UInt8](repeating: 0, count: XChaChaPoly.nonceLength)

    static func wrapKey(shared: SecureBytes, ephemeral: [UInt8], recipient: X25519.PublicKey) throws -> SecureBytes {
        SecureBytes(
            try BLAKE2b.hash(wrapLabel + ephemeral + recipient.rawRepresentation, length: 32, key: shared))
    }

    static func associatedData(group: GroupID, keyID: EpochKeyID, device: DeviceID) -> [UInt8] {
        CBOREncoder.encode(.array([.text(adLabel), .bytes(group.bytes), .bytes(keyID.bytes), .bytes(device.bytes)]))
    }
}
