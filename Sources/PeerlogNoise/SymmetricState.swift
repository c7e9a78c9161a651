import PeerlogCrypto

/// The SymmetricState of spec §5.2: chaining key, handshake hash and the CipherState.
struct SymmetricState: Sendable {
    let hash: NoiseHash
    private(set) var ck: [UInt8]
    private(set) var h: [UInt8]
    private(set) var cipher = NoiseCipherState()

    init(protocolName: String, hash: NoiseHash) {
        self.hash = hash
        let name = Array(protocolName.utf8)
        // Names up to HASHLEN bytes are zero-padded, longer ones hashed (so a 32-byte name with SHA256 is padded).
        h = name.count <= hash.length ? name + [UInt8](repeating: 0, count: hash.length - name.count) : hash.hash(name)
        ck = h
    }

    var hasKey: Bool { cipher.hasKey }

    mutating func mixHash(_ data: [UInt8]) { h = hash.hash(h + data) }

    mutating func mixKey(_ ikm: [UInt8]) {
        let out = hash.hkdf(chainingKey: ck, ikm: ikm, count: 2)
        ck = out[0]
        cipher = NoiseCipherState(key: Self.cipherKey(out[1]))
    }

    mutating func mixKeyAndHash(_ ikm: [UInt8]) {
        let out = hash.hkdf(chainingKey: ck, ikm: ikm, count: 3)
        ck = out[0]
        mixHash(out[1])
        cipher = NoiseCipherState(key: Self.cipherKey(out[2]))
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws -> [UInt8] {
        let ciphertext = try cipher.encrypt(ad: h, plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws -> [UInt8] {
        let plaintext = try cipher.decrypt(ad: h, ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// The two transport CipherStates: (initiator to responder, responder to initiator).
    func split() -> (NoiseCipherState, NoiseCipherState) {
        let out = hash.hkdf(chainingKey: ck, ikm: [], count: 2)
        return (NoiseCipherState(key: Self.cipherKey(out[0])), NoiseCipherState(key: Self.cipherKey(out[1])))
    }

    /// With a 64-byte hash, cipher keys are the first 32 bytes of the HKDF output (spec §5.2).
    private static func cipherKey(_ output: [UInt8]) -> SecureBytes {
        var out = output
        defer { SecureBytes.zero(&out) }
        return SecureBytes(out.prefix(ChaChaPoly.keyLength))
    }
}
