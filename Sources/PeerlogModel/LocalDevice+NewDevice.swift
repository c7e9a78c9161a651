import PeerlogCrypto

extension LocalDevice {
    /// A new device of the identity whose key is `identityKey` (restored from a backup, or
    /// received by a link): fresh signing and Noise keys, certified by `identityKey`, in memory.
    /// Throws a `ModelError` (`fieldOutOfRange`) for a name outside 1...64 bytes.
    public static func newDevice(identityKey: Ed25519.PrivateKey, name: String, createdAt: UInt64) throws -> LocalDevice
    {
        let signingKey = Ed25519.PrivateKey()
        let noiseKey = X25519.PrivateKey()
        let cert = try DeviceCertificate.issue(
            identityKey: identityKey, device: DeviceID(publicKey: signingKey.publicKey), noiseKey: noiseKey.publicKey,
            name: name, createdAt: createdAt)
        return LocalDevice(identityKey: identityKey, signingKey: signingKey, noiseKey: noiseKey, certificate: cert)
    }
}
