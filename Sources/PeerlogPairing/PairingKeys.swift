import PeerlogCrypto

/// The CPace inputs and key schedule of a pairing exchange (docs/PROTOCOL.md §20.3, §20.5).
struct PairingKeys: Sendable {
    /// Prefix of the channel identifier and of the transcript hash input.
    static let protocolName = "peerlog-pair/v1"
    /// CPace associated data of the guest (initiator, ADa).
    static let guestAssociatedData: [UInt8] = Array("guest".utf8)
    /// CPace associated data of the host (responder, ADb).
    static let hostAssociatedData: [UInt8] = Array("host".utf8)

    /// CI = lv_cat("peerlog-pair/v1", purpose, nameplate as decimal text).
    static func channelIdentifier(purpose: PairingPurpose, nameplate: Int) -> [UInt8] {
        CPace.lvCat([Array(protocolName.utf8), Array(purpose.rawValue.utf8), Array(String(nameplate).utf8)])
    }

    /// The host's commitment to its share in `pair_open`: SHA-256(Yb).
    static func commitment(to share: [UInt8]) -> [UInt8] { SHA256.hash(share) }

    /// SHA-256(lv_cat("peerlog-pair/v1 transcript", pair_open bytes, pair_start bytes, Yb)).
    static func transcriptHash(open: [UInt8], start: [UInt8], hostShare: [UInt8]) -> [UInt8] {
        SHA256.hash(CPace.lvCat([Array((protocolName + " transcript").utf8), open, start, hostShare]))
    }

    /// 32 bytes of transcript hash, what payload signatures cover.
    let transcriptHash: [UInt8]
    /// The host's key-confirmation tag (`pair_reply.confirm`).
    let hostConfirm: [UInt8]
    /// The guest's key-confirmation tag (`pair_confirm.confirm`).
    let guestConfirm: [UInt8]
    /// Seals the guest's payload (`pair_confirm.box`).
    let guestBox: SecureBytes
    /// Seals the host's payload (`pair_done.box`).
    let hostBox: SecureBytes
    /// Six digits people can compare, `"123 456"`.
    let confirmation: String

    /// Derives every key from ISK: `K_label = HMAC-SHA-512(ISK, label)[0..<32]`, tags are
    /// `HMAC-SHA-256(K_label, transcriptHash)`.
    init(isk: SecureBytes, transcriptHash: [UInt8]) {
        func key(_ label: String) -> SecureBytes {
            var k = isk.copyBytes()
            defer { SecureBytes.zero(&k) }
            var mac = HMAC<SHA512>.authenticationCode(for: Array(label.utf8), key: k)
            defer { SecureBytes.zero(&mac) }
            return SecureBytes(mac.prefix(32))
        }
        func tag(_ label: String) -> [UInt8] {
            var k = key(label).copyBytes()
            defer { SecureBytes.zero(&k) }
            return HMAC<SHA256>.authenticationCode(for: transcriptHash, key: k)
        }
        self.transcriptHash = transcriptHash
        hostConfirm = tag("host confirm")
        guestConfirm = tag("guest confirm")
        guestBox = key("guest box")
        hostBox = key("host box")
        let digits = tag("confirmation").prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 1_000_000
        let text = String(digits)
        let padded = String(repeating: "0", count: 6 - text.count) + text
        confirmation = "\(padded.prefix(3)) \(padded.suffix(3))"
    }

    /// The nonce of both boxes: 12 zero bytes. Each box key seals exactly one message and is never
    /// used again (a fresh ISK per exchange), so a fixed nonce never repeats under a key.
    static let boxNonce = [UInt8](repeating: 0, count: ChaChaPoly.nonceLength)

    /// Seals `payload` under `key` with the transcript hash as associated data.
    func seal(_ payload: [UInt8], key: SecureBytes) -> [UInt8] {
        // Key and nonce lengths are fixed here, so sealing cannot fail.
        try! ChaChaPoly.seal(payload, key: key, nonce: Self.boxNonce, authenticating: transcriptHash)
    }

    /// Opens a box sealed by `seal`, or nil when it does not authenticate.
    func open(_ box: [UInt8], key: SecureBytes) -> [UInt8]? {
        try? ChaChaPoly.open(box, key: key, nonce: Self.boxNonce, authenticating: transcriptHash)
    }
}
