import PeerlogCrypto

/// The hash functions of spec §12.5 and §12.8, with HMAC (RFC 2104) and HKDF as in spec §4.3.
public enum NoiseHash: String, Sendable {
    case blake2b = "BLAKE2b"
    case sha256 = "SHA256"

    var length: Int {
        switch self {
        case .blake2b: BLAKE2b.digestLength
        case .sha256: SHA256.digestLength
        }
    }

    func hash(_ data: [UInt8]) -> [UInt8] {
        switch self {
        case .blake2b: BLAKE2b.hash(data)
        case .sha256: SHA256.hash(data)
        }
    }

    func hmac(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        switch self {
        case .blake2b: HMAC<BLAKE2b>.authenticationCode(for: data, key: key)
        case .sha256: HMAC<SHA256>.authenticationCode(for: data, key: key)
        }
    }

    /// HKDF(chainingKey, ikm, count) for count 2 or 3.
    func hkdf(chainingKey: [UInt8], ikm: [UInt8], count: Int) -> [[UInt8]] {
        var temp = hmac(key: chainingKey, ikm)
        defer { SecureBytes.zero(&temp) }
        var outputs = [hmac(key: temp, [0x01])]
        for i in 2...count {
            outputs.append(hmac(key: temp, outputs[i - 2] + [UInt8(i)]))
        }
        return outputs
    }
}
