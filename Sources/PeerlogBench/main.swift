import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

// Prints figures and ratios measured in one run (release build):
//   swift run -c release peerlog-bench [seconds-per-figure]
// Ratios compare work to raw Ed25519 verification measured in the same process, so they hold
// across machines better than absolute rates do.

let secondsPerFigure = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 1.0 : 1.0

/// Runs `body` in batches until `secondsPerFigure` have passed; returns operations per second.
func rate(_ name: String, batch: Int = 200, _ body: (Int) throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    try body(0)  // warm-up
    var ops = 0
    let start = clock.now
    var elapsed = Duration.zero
    repeat {
        for i in 0..<batch { try body(ops + i) }
        ops += batch
        elapsed = clock.now - start
    } while elapsed < .milliseconds(Int(secondsPerFigure * 1000))
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let r = Double(ops) / seconds
    print(pad(name, 46) + pad(format(r) + " /s", 16, left: false))
    return r
}

func format(_ v: Double) -> String {
    let i = Int(v.rounded())
    var s = String(i)
    var out = ""
    while s.count > 3 { out = "," + s.suffix(3) + out; s.removeLast(3) }
    return s + out
}

func pad(_ s: String, _ n: Int, left: Bool = true) -> String {
    let fill = String(repeating: " ", count: max(0, n - s.count))
    return left ? s + fill : fill + s
}

func ratio(_ name: String, _ value: Double, target: Double? = nil) {
    let shown = (value * 100).rounded() / 100
    print(pad(name, 46) + pad(String(shown), 16, left: false) + (target.map { value >= $0 ? "   (target ≥ \($0): met)" : "   (target ≥ \($0): NOT met)" } ?? ""))
}

print("peerlog-bench: \(secondsPerFigure) s per figure")
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
    try device.sign(Receipt.Draft(group: group, type: "entity.put", counter: UInt64(i), parents: [CID(hashing: [UInt8(i & 0xff)])], hlc: HLCTimestamp(physical: 1_700_000_000_000 + UInt64(i), logical: 0), body: body))
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
