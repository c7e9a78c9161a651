import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// Every decoder of a signed format, fed malformed, truncated, non-canonical and oversized input:
/// each gets a precise error and nothing crashes.
struct MalformedInputTests {
    static let device = ReceiptTests.device

    static var validFields: [String: CBOR] {
        [
            "v": 1, "group": .bytes(GoldenFixture.group.bytes), "type": "app.note",
            "author": .bytes(device.device.bytes), "identity": .bytes(device.identity.bytes),
            "counter": 1, "parents": [], "hlc": 5, "body": .null,
        ]
    }

    struct Case: Sendable, CustomStringConvertible {
        let description: String
        let code: ModelError.Code
        let change: @Sendable (inout [String: CBOR]) -> Void
    }

    static let receiptCases: [Case] = [
        Case(description: "missing field", code: .wrongShape) { $0["hlc"] = nil },
        Case(description: "unknown field", code: .wrongShape) { $0["extra"] = 1 },
        Case(description: "version 2", code: .unsupportedVersion) { $0["v"] = 2 },
        Case(description: "version as text", code: .wrongShape) { $0["v"] = "1" },
        Case(description: "counter 0", code: .fieldOutOfRange) { $0["counter"] = 0 },
        Case(description: "negative counter", code: .wrongShape) { $0["counter"] = .int(-1) },
        Case(description: "short group id", code: .fieldOutOfRange) { $0["group"] = .bytes([1, 2]) },
        Case(description: "group id as text", code: .wrongShape) { $0["group"] = "g" },
        Case(description: "bad type characters", code: .fieldOutOfRange) { $0["type"] = "App Note" },
        Case(description: "empty type", code: .fieldOutOfRange) { $0["type"] = "" },
        Case(description: "type too long", code: .fieldOutOfRange) {
            $0["type"] = .text(String(repeating: "a", count: Receipt.maxTypeBytes + 1))
        },
        Case(description: "author wrong length", code: .fieldOutOfRange) { $0["author"] = .bytes([1]) },
        Case(description: "parents not an array", code: .wrongShape) { $0["parents"] = 1 },
        Case(description: "parent not a link", code: .wrongShape) { $0["parents"] = [.bytes(CID(hashing: [1]).bytes)] },
        Case(description: "parents unsorted", code: .wrongShape) {
            let cids = [CID(hashing: [1]), CID(hashing: [2])].sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            $0["parents"] = .array(cids.reversed().map(\.cborLink))
        },
        Case(description: "parents duplicated", code: .wrongShape) {
            $0["parents"] = [CID(hashing: [1]).cborLink, CID(hashing: [1]).cborLink]
        },
        Case(description: "too many parents", code: .sizeLimitExceeded) {
            let cids = (0...Receipt.maxParents).map { CID(hashing: [UInt8($0)]) }.sorted {
                $0.bytes.lexicographicallyPrecedes($1.bytes)
            }
            $0["parents"] = .array(cids.map(\.cborLink))
        },
        Case(description: "float in body", code: .wrongShape) { $0["body"] = .textMap(["x": .float(1.5)]) },
        Case(description: "tag in body", code: .wrongShape) { $0["body"] = .tagged(1, 5) },
        Case(description: "undefined in body", code: .wrongShape) { $0["body"] = .undefined },
        Case(description: "non-text key in body", code: .wrongShape) { $0["body"] = .map([.unsigned(1): 2]) },
        Case(description: "bad link in body", code: .wrongShape) { $0["body"] = .tagged(42, .bytes([0, 1, 2])) },
        Case(description: "body nested too deep", code: .malformedEncoding) {
            var v: CBOR = 0
            for _ in 0..<(Receipt.maxBodyDepth + 2) { v = [v] }
            $0["body"] = v
        },
        Case(description: "hlc as text", code: .wrongShape) { $0["hlc"] = "now" },
    ]

    @Test(arguments: receiptCases)
    func receiptFieldErrors(c: Case) throws {
        var fields = Self.validFields
        c.change(&fields)
        let payload = CBOREncoder.encode(.textMap(fields))
        let sig = Self.device.signingKey.signature(for: SignatureContext.receipt.message(for: payload))
        do {
            _ = try Receipt(payload: payload, signature: sig, certificate: Self.device.certificate)
            Issue.record("accepted: \(c)")
        } catch let e as ModelError {
            #expect(e.code == c.code, "\(e)")
        }
    }

    @Test func validFieldsAreAccepted() throws {
        let payload = CBOREncoder.encode(.textMap(Self.validFields))
        let sig = Self.device.signingKey.signature(for: SignatureContext.receipt.message(for: payload))
        #expect(try Receipt(payload: payload, signature: sig, certificate: Self.device.certificate).verify() == .valid)
    }

    @Test func payloadSizeLimitBoundary() throws {
        // Grow the body until the payload is exactly at the limit, then one byte over.
        var fields = Self.validFields
        fields["body"] = .bytes([])
        let base = CBOREncoder.encode(.textMap(fields)).count
        func payload(totalBytes: Int) -> [UInt8] {
            // A byte string of n bytes with a 3-byte head (n in 256...65535) costs n + 3 - 1 over the empty one.
            fields["body"] = .bytes([UInt8](repeating: 7, count: totalBytes - base - 2))
            return CBOREncoder.encode(.textMap(fields))
        }
        let atLimit = payload(totalBytes: Receipt.maxPayloadBytes)
        #expect(atLimit.count == Receipt.maxPayloadBytes)
        let sign = { (p: [UInt8]) in Self.device.signingKey.signature(for: SignatureContext.receipt.message(for: p)) }
        let r = try Receipt(payload: atLimit, signature: sign(atLimit), certificate: Self.device.certificate)
        #expect(try Receipt(encoded: r.encoded) == r, "a maximal receipt still fits its container limit")
        let over = payload(totalBytes: Receipt.maxPayloadBytes + 1)
        #expect(over.count == Receipt.maxPayloadBytes + 1)
        #expect(throws: ModelError(.sizeLimitExceeded, "")) {
            try Receipt(payload: over, signature: sign(over), certificate: Self.device.certificate)
        }
    }

    /// Byte-level damage to containers of every kind.
    @Test func containerDamage() throws {
        let receipt = try Self.device.sign(ReceiptTests.draft(body: "x"))
        let containers: [(String, [UInt8], ([UInt8]) throws -> Void)] = [
            ("receipt", receipt.encoded, { _ = try Receipt(encoded: $0) }),
            ("envelope", GoldenFixture.envelope.encoded, { _ = try Envelope(encoded: $0) }),
            ("certificate", GoldenFixture.certificate.encoded, { _ = try DeviceCertificate(encoded: $0) }),
        ]
        for (name, good, parse) in containers {
            #expect(throws: Never.self, "\(name) intact") { try parse(good) }
            // Every truncation fails with an error, never a crash or a partial result.
            for n in 0..<good.count {
                #expect(throws: ModelError.self, "\(name) truncated to \(n)") { try parse(Array(good.prefix(n))) }
            }
            #expect(throws: ModelError(.malformedEncoding, ""), "\(name) trailing byte") { try parse(good + [0]) }
            // Indefinite-length outer map: well-formed CBOR, but not deterministic.
            var indefinite = good
            indefinite[0] = 0xbf
            indefinite.append(0xff)
            #expect(throws: ModelError(.malformedEncoding, ""), "\(name) indefinite") { try parse(indefinite) }
            #expect(throws: ModelError(.wrongShape, ""), "\(name) not a map") { try parse([0x80]) }
            #expect(throws: ModelError(.sizeLimitExceeded, ""), "\(name) oversized") {
                try parse([UInt8](repeating: 0, count: Receipt.maxEncodedBytes + 1))
            }
            // Random single-byte corruption: either a clean error or a parse that then fails verification.
            var rng = SeededRandom(seed: UInt64(good.count))
            for _ in 0..<300 {
                var bad = good
                bad[Int.random(in: 0..<bad.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                _ = try? parse(bad)
            }
        }
        // Wrong signature length inside an otherwise valid container.
        let shortSig = CBOREncoder.encode(
            .textMap(["envelope": .bytes(GoldenFixture.envelope.payload), "sig": .bytes([1, 2])]))
        #expect(throws: ModelError(.fieldOutOfRange, "")) { try Envelope(encoded: shortSig) }
    }

    @Test func certificateAndEnvelopeFieldErrors() throws {
        let key = Ed25519.PrivateKey()
        #expect(throws: ModelError(.fieldOutOfRange, "")) {
            try DeviceCertificate.issue(
                identityKey: key, device: DeviceID(publicKey: key.publicKey), noiseKey: X25519.PrivateKey().publicKey,
                name: "", createdAt: 0)
        }
        #expect(throws: ModelError(.fieldOutOfRange, "")) {
            try DeviceCertificate.issue(
                identityKey: key, device: DeviceID(publicKey: key.publicKey), noiseKey: X25519.PrivateKey().publicKey,
                name: String(repeating: "n", count: DeviceCertificate.maxNameBytes + 1), createdAt: 0)
        }
        #expect(throws: Never.self) {
            try DeviceCertificate.issue(
                identityKey: key, device: DeviceID(publicKey: key.publicKey), noiseKey: X25519.PrivateKey().publicKey,
                name: String(repeating: "n", count: DeviceCertificate.maxNameBytes), createdAt: 0)
        }
        #expect(throws: ModelError(.fieldOutOfRange, "")) {
            try Envelope.sign(
                group: GoldenFixture.group, seq: 0, receipt: CID(hashing: []), term: 0, receivedAt: 0, key: key)
        }
    }
}
