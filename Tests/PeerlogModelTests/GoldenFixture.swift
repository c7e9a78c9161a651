import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

/// Fixed keys and fields: the worked example of docs/PROTOCOL.md.
enum GoldenFixture {
    static let identityKey = try! Ed25519.PrivateKey(seed: SecureBytes([UInt8](repeating: 0x01, count: 32)))
    static let deviceKey = try! Ed25519.PrivateKey(seed: SecureBytes([UInt8](repeating: 0x02, count: 32)))
    static let noiseKey = try! X25519.PrivateKey(SecureBytes([UInt8](repeating: 0x03, count: 32)))
    static let certificate = try! DeviceCertificate.issue(
        identityKey: identityKey, device: DeviceID(publicKey: deviceKey.publicKey), noiseKey: noiseKey.publicKey,
        name: "golden-laptop", createdAt: 1_700_000_000_000)
    static let group = try! GroupID(bytes: Array(0..<16))
    static let receipt = try! Receipt.sign(
        Receipt.Draft(
            group: group, type: "entity.put", counter: 1, parents: [],
            hlc: HLCTimestamp(physical: 1_700_000_000_123, logical: 0),
            body: .textMap(["key": "color", "value": "blue"])),
        signingKey: deviceKey, certificate: certificate)
    static let envelope = try! Envelope.sign(
        group: group, seq: 1, receipt: receipt.cid, term: 0, receivedAt: 1_700_000_000_500, key: deviceKey)
}
