import CSodium

/// CPace, a balanced password-authenticated key exchange, in the CPACE-RISTR255-SHA512 cipher suite
/// of draft-irtf-cfrg-cpace-21 (ristretto255, SHA-512), initiator-responder setting
/// (docs/PROTOCOL.md §20.3).
///
/// Both parties derive a generator from the password: `g = element_derivation(SHA-512(
/// generator_string("CPaceRistretto255", PRS, CI, sid, 128)))`, pick a random scalar `y`, and send
/// `Y = y·g`. Each computes `K = y·Y_peer` and `ISK = SHA-512(lv_cat("CPaceRistretto255_ISK", sid, K)
/// ‖ lv_cat(Ya, ADa) ‖ lv_cat(Yb, ADb))`. The two ISKs match only when both used the same password,
/// channel identifier and session id; a peer that guessed wrong learns nothing that lets it test a
/// second guess offline. CPace itself does not tell either side whether the keys match: the caller
/// adds key confirmation.
public struct CPace: Sendable {
    /// Which message a party sends: the initiator's share is `Ya`, the responder's `Yb`; the transcript
    /// orders them that way whoever computes it.
    public enum Role: Sendable {
        /// Party A: sends `Ya` and `ADa` first.
        case initiator
        /// Party B: answers with `Yb` and `ADb`.
        case responder
    }

    /// The domain-separation identifier of the ristretto255 group, `G.DSI`.
    public static let dsi: [UInt8] = Array("CPaceRistretto255".utf8)
    /// SHA-512's input block size, the `s_in_bytes` the generator string pads to.
    public static let hashBlockBytes = 128
    /// Length of a share (an encoded ristretto255 element).
    public static let shareLength = 32
    /// Length of the intermediate session key ISK (a SHA-512 digest).
    public static let keyLength = 64

    private let role: Role
    private let scalar: SecureBytes
    private let sid: [UInt8]
    private let associatedData: [UInt8]

    /// This party's public share `Y = y·g` (32 bytes), to send to the peer with the associated data.
    public let share: [UInt8]

    /// Derives the generator from `password` (PRS), `sid` and `channelIdentifier` (CI) and computes
    /// this party's share. `scalar` (32 bytes, little-endian, below the group order) is for test vectors
    /// only; by default a fresh uniformly random non-zero scalar is drawn. Throws `invalidParameter` if
    /// the scalar has the wrong length or yields the identity.
    public init(
        role: Role, password: [UInt8], sid: [UInt8], channelIdentifier: [UInt8], associatedData: [UInt8],
        scalar: [UInt8]? = nil
    ) throws {
        Sodium.ensureInitialized()
        var y: [UInt8]
        if let scalar {
            guard scalar.count == Int(crypto_core_ristretto255_SCALARBYTES) else {
                throw CryptoError(.invalidParameter, "CPace scalar must be 32 bytes")
            }
            y = scalar
        } else {
            y = [UInt8](repeating: 0, count: Int(crypto_core_ristretto255_SCALARBYTES))
            crypto_core_ristretto255_scalar_random(&y)
        }
        defer { SecureBytes.zero(&y) }
        var g = Self.generator(password: password, channelIdentifier: channelIdentifier, sid: sid)
        defer { SecureBytes.zero(&g) }
        var out = [UInt8](repeating: 0, count: Self.shareLength)
        guard crypto_scalarmult_ristretto255(&out, y, g) == 0 else {
            throw CryptoError(.invalidParameter, "CPace share is the identity element")
        }
        self.role = role
        self.scalar = SecureBytes(y)
        self.sid = sid
        self.associatedData = associatedData
        self.share = out
    }

    /// The intermediate session key ISK (64 bytes) from the peer's share and associated data. Throws
    /// `weakSharedSecret` when `peerShare` is not 32 bytes, is not the canonical encoding of a
    /// ristretto255 element, or makes `K` the identity element (the draft's abort conditions).
    public func sharedKey(peerShare: [UInt8], peerAssociatedData: [UInt8]) throws -> SecureBytes {
        var k = try sharedPoint(peerShare: peerShare)
        defer { SecureBytes.zero(&k) }
        let (ya, ada, yb, adb) =
            role == .initiator
            ? (share, associatedData, peerShare, peerAssociatedData)
            : (peerShare, peerAssociatedData, share, associatedData)
        var input =
            Self.lvCat([Self.dsi + Array("_ISK".utf8), sid, k]) + Self.lvCat([ya, ada]) + Self.lvCat([yb, adb])
        defer { SecureBytes.zero(&input) }
        var isk = SHA512.hash(input)
        defer { SecureBytes.zero(&isk) }
        return SecureBytes(isk)
    }

    /// `K = scalar_mult_vfy(y, peerShare)`, refusing an invalid encoding or the identity.
    func sharedPoint(peerShare: [UInt8]) throws -> [UInt8] {
        guard peerShare.count == Self.shareLength, crypto_core_ristretto255_is_valid_point(peerShare) == 1 else {
            throw CryptoError(.weakSharedSecret, "CPace peer share is not a valid ristretto255 element")
        }
        var k = [UInt8](repeating: 0, count: Self.shareLength)
        let status = scalar.withUnsafeBytes { y in
            crypto_scalarmult_ristretto255(&k, y.bindMemory(to: UInt8.self).baseAddress!, peerShare)
        }
        guard status == 0, sodium_is_zero(k, k.count) == 0 else {
            SecureBytes.zero(&k)
            throw CryptoError(.weakSharedSecret, "CPace shared point is the identity element")
        }
        return k
    }

    /// The encoded generator `g` (32 bytes) for a password, channel identifier and session id:
    /// `element_derivation(SHA-512(generator_string(DSI, PRS, CI, sid, 128)))`.
    public static func generator(password: [UInt8], channelIdentifier: [UInt8], sid: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var string = generatorString(password: password, channelIdentifier: channelIdentifier, sid: sid)
        defer { SecureBytes.zero(&string) }
        var hash = SHA512.hash(string)
        defer { SecureBytes.zero(&hash) }
        var g = [UInt8](repeating: 0, count: shareLength)
        crypto_core_ristretto255_from_hash(&g, hash)
        return g
    }

    /// `generator_string(DSI, PRS, CI, sid, s_in_bytes)`: `lv_cat(DSI, PRS, zero_bytes(len_zpad), CI,
    /// sid)` with `len_zpad = max(0, 128 - len(prepend_len(PRS)) - len(prepend_len(DSI)) - 1)`.
    public static func generatorString(password: [UInt8], channelIdentifier: [UInt8], sid: [UInt8]) -> [UInt8] {
        let zpad = max(0, hashBlockBytes - prependLen(password).count - prependLen(dsi).count - 1)
        return lvCat([dsi, password, [UInt8](repeating: 0, count: zpad), channelIdentifier, sid])
    }

    /// `prepend_len(data)`: the LEB128 encoding of `data.count`, then `data`.
    public static func prependLen(_ data: [UInt8]) -> [UInt8] {
        var length = data.count
        var out: [UInt8] = []
        repeat {
            var byte = UInt8(length & 0x7f)
            length >>= 7
            if length > 0 { byte |= 0x80 }
            out.append(byte)
        } while length > 0
        return out + data
    }

    /// `lv_cat(a0, a1, ...)`: the concatenation of `prepend_len` of each part.
    public static func lvCat(_ parts: [[UInt8]]) -> [UInt8] {
        parts.flatMap(prependLen)
    }
}
