import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

/// Ed25519, receipt encode/decode/verify, CBOR: returns the raw verify rate for ratios.
func foundationBench() throws -> Double {
    let device = try LocalDevice.generate(name: "bench", createdAt: 1)
    let message = SecureRandom.bytes(200)
    let signature = device.signingKey.signature(for: message)

    let sign = rate("ed25519 sign (200-byte message)") { _ in _ = device.signingKey.signature(for: message) }
    let verify = rate("ed25519 verify (200-byte message)") { _ in
        precondition(device.signingKey.publicKey.isValidSignature(signature, for: message))
    }

    let group = GroupID.random()
    let body: CBOR = .textMap(["key": "k-000123", "value": .bytes([UInt8](repeating: 7, count: 64))])
    let receipts = try (1...1000).map { i in
        try device.sign(
            Receipt.Draft(
                group: group, type: "entity.put", counter: UInt64(i), parents: [CID(hashing: [UInt8(i & 0xff)])],
                hlc: HLCTimestamp(physical: 1_700_000_000_000 + UInt64(i), logical: 0), body: body))
    }
    let containers = receipts.map(\.encoded)

    let encodeCIDVerify = rate("receipt encode + CID + verify (cert cached)") { i in
        let r = receipts[i % receipts.count]
        let payload = CBOREncoder.encode(r.payloadValue)
        precondition(CID(hashing: payload) == r.cid)
        precondition(r.verify(certificateVerified: true) == .valid)
    }
    let decodeVerify = try rate("receipt decode + CID + verify (cert cached)") { i in
        let r = try Receipt(encoded: containers[i % containers.count])
        precondition(r.verify(certificateVerified: true) == .valid)
    }
    let fullChain = try rate("receipt decode + CID + verify (full chain)") { i in
        let r = try Receipt(encoded: containers[i % containers.count])
        precondition(r.verify() == .valid)
    }
    let cborRate = rate("deterministic CBOR encode of a receipt payload", batch: 2000) { i in
        _ = CBOREncoder.encode(receipts[i % receipts.count].payloadValue)
    }
    print("")
    ratio("sign / verify", sign / verify)
    ratio("encode+CID+verify / raw verify", encodeCIDVerify / verify, target: 0.6)
    ratio("decode+CID+verify / raw verify", decodeVerify / verify, target: 0.6)
    ratio("full chain / raw verify", fullChain / verify)
    _ = cborRate

    return verify
}
