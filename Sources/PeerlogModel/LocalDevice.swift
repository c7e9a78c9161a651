import PeerlogCrypto

/// This device's keys and certificate, as kept in a Peerlog home directory:
///
/// - `identity.key`: the identity's Ed25519 seed (secret, 0600); absent on a device linked
///   without it (`peerlog device link --certificate-only`)
/// - `device.key`: the device's Ed25519 seed (secret, 0600)
/// - `noise.key`: the device's X25519 Noise static key (secret, 0600)
/// - `device.cert`: the device certificate container (public)
public struct LocalDevice: Sendable {
    /// The identity's signing key (`identity.key`): it signs device certificates, revocations
    /// and backups. Secret. Nil on a device linked without it, which can sync and write as the
    /// identity but not link, revoke or export.
    public let identityKey: Ed25519.PrivateKey?

    /// The identity key, or a `ModelError` (`keyFile`) saying this device holds none and cannot
    /// do `what` (e.g. "link devices").
    public func requireIdentityKey(for what: String) throws -> Ed25519.PrivateKey {
        guard let identityKey else {
            throw ModelError(
                .keyFile,
                "this device holds no identity key (it was linked with --certificate-only), so it cannot \(what); use a device that holds it"
            )
        }
        return identityKey
    }
    /// This device's signing key (`device.key`): it signs receipts, and envelopes when this device
    /// sequences. Secret.
    public let signingKey: Ed25519.PrivateKey
    /// This device's X25519 Noise static key (`noise.key`), proved in the channel handshake
    /// (docs/PROTOCOL.md §14.1). Secret.
    public let noiseKey: X25519.PrivateKey
    /// The certificate binding `signingKey` and `noiseKey` to the identity (`device.cert`,
    /// docs/PROTOCOL.md §3.1).
    public let certificate: DeviceCertificate

    /// The identity id: `identityKey`'s public key.
    public var identity: IdentityID { certificate.identity }
    /// The device id: `signingKey`'s public key.
    public var device: DeviceID { certificate.device }

    /// The paths of the four key files in `home` (docs/PROTOCOL.md §7); nothing is read or checked.
    public static func paths(home: String) -> (identity: String, device: String, noise: String, certificate: String) {
        (home + "/identity.key", home + "/device.key", home + "/noise.key", home + "/device.cert")
    }

    /// A new identity with its first device, in memory.
    public static func generate(name: String, createdAt: UInt64) throws -> LocalDevice {
        try newDevice(identityKey: Ed25519.PrivateKey(), name: name, createdAt: createdAt)
    }

    /// Another device of this identity: fresh device keys, certified by this identity key.
    public func additionalDevice(name: String, createdAt: UInt64) throws -> LocalDevice {
        try Self.newDevice(
            identityKey: try requireIdentityKey(for: "certify devices"), name: name, createdAt: createdAt)
    }

    /// Keys derived from `seed` (BLAKE2b with a label per key), so tests and examples are
    /// reproducible. Never use this for a real identity: anyone with the seed has the keys.
    public static func deterministic(seed: [UInt8], name: String, createdAt: UInt64) throws -> LocalDevice {
        func derive(_ label: String) throws -> SecureBytes {
            SecureBytes(try BLAKE2b.hash(Array("peerlog-test-key/\(label)/".utf8) + seed, length: 32))
        }
        let identityKey = try Ed25519.PrivateKey(seed: derive("identity"))
        let signingKey = try Ed25519.PrivateKey(seed: derive("device"))
        let noiseKey = try X25519.PrivateKey(derive("noise"))
        let cert = try DeviceCertificate.issue(
            identityKey: identityKey, device: DeviceID(publicKey: signingKey.publicKey), noiseKey: noiseKey.publicKey,
            name: name, createdAt: createdAt)
        return LocalDevice(identityKey: identityKey, signingKey: signingKey, noiseKey: noiseKey, certificate: cert)
    }

    /// Creates the home directory (0700) and writes the key files. Refuses if a key already exists.
    public func save(home: String) throws {
        let p = Self.paths(home: home)
        for path in [p.identity, p.device, p.noise, p.certificate] where FileIO.exists(path) {
            throw ModelError(.keyFile, "\(path) already exists: \(home) is already initialised")
        }
        try FileIO.makeDirectory(home)
        if let identityKey { try KeyFile.write(identityKey.seed, kind: .identitySeed, to: p.identity) }
        try KeyFile.write(signingKey.seed, kind: .deviceSeed, to: p.device)
        try KeyFile.write(noiseKey.rawRepresentation, kind: .noiseKey, to: p.noise)
        try FileIO.writeNew(certificate.encoded, to: p.certificate, mode: 0o644)
    }

    /// Loads and cross-checks the keys: the certificate must verify and bind exactly these keys.
    public static func load(home: String) throws -> LocalDevice {
        let p = Self.paths(home: home)
        guard FileIO.exists(p.certificate) else {
            throw ModelError(.keyFile, "\(home) is not initialised (run: peerlog init --home \(home))")
        }
        // A device linked with --certificate-only has no identity.key.
        let identityKey =
            FileIO.exists(p.identity)
            ? try Ed25519.PrivateKey(seed: try KeyFile.read(p.identity, kind: .identitySeed)) : nil
        let signingKey = try Ed25519.PrivateKey(seed: try KeyFile.read(p.device, kind: .deviceSeed))
        let noiseKey = try X25519.PrivateKey(try KeyFile.read(p.noise, kind: .noiseKey))
        let cert = try DeviceCertificate(
            encoded: try FileIO.read(p.certificate, maxBytes: DeviceCertificate.maxEncodedBytes))
        guard cert.verify().isValid else { throw ModelError(.badSignature, "\(p.certificate) does not verify") }
        guard identityKey.map({ cert.identity.publicKey == $0.publicKey }) ?? true,
            cert.device.publicKey == signingKey.publicKey,
            cert.noiseKey == noiseKey.publicKey
        else {
            throw ModelError(.certificateMismatch, "\(p.certificate) does not bind the keys in \(home)")
        }
        return LocalDevice(identityKey: identityKey, signingKey: signingKey, noiseKey: noiseKey, certificate: cert)
    }

    /// Signs a receipt draft as this device.
    public func sign(_ draft: Receipt.Draft) throws -> Receipt {
        try Receipt.sign(draft, signingKey: signingKey, certificate: certificate)
    }
}
