import PeerlogCrypto

extension LocalDevice {
    /// A device whose certificate another device of the identity issued (`peerlog init
    /// --join`): the keys are checked against the certificate, which must verify. `identityKey`
    /// is nil when the linking device kept it (`--certificate-only`).
    public static func linked(
        identityKey: Ed25519.PrivateKey?, signingKey: Ed25519.PrivateKey, noiseKey: X25519.PrivateKey,
        certificate: DeviceCertificate
    ) throws -> LocalDevice {
        guard certificate.verify().isValid else {
            throw ModelError(.badSignature, "the device certificate does not verify")
        }
        guard identityKey.map({ certificate.identity.publicKey == $0.publicKey }) ?? true,
            certificate.device.publicKey == signingKey.publicKey, certificate.noiseKey == noiseKey.publicKey
        else {
            throw ModelError(.certificateMismatch, "the device certificate does not bind this device's keys")
        }
        return LocalDevice(
            identityKey: identityKey, signingKey: signingKey, noiseKey: noiseKey, certificate: certificate)
    }
}
