import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogTestSupport
import Testing

/// The group encryption formats (docs/PROTOCOL.md §22): epoch key ids, keys sealed to devices,
/// encrypted bodies and `group.key` bodies; every binding in the associated data counts, and an
/// independent Python implementation (tools/interop/group_crypto.py) opens what Peerlog seals
/// and the other way round.
struct GroupEncryptionTests {
    let group = try! GroupID(bytes: Array(0..<16))
    let author = try! DeviceID(bytes: [UInt8](repeating: 7, count: 32))
    var binding: EncryptedBody.Binding { .init(group: group, type: "entity.put", author: author, counter: 3) }
    let body: CBOR = .textMap(["key": "note/1", "value": "\"Buy milk\""])

    @Test func keyIDsNameKeysWithoutShowingThem() throws {
        let a = EpochKey()
        let b = EpochKey()
        #expect(a.id != b.id)
        #expect(try EpochKey(secret: a.secret).id == a.id)
        #expect(!"\(a)".contains(hexString(a.secret.copyBytes())))
        #expect(throws: ModelError.self) { try EpochKey(secret: SecureBytes([1, 2, 3])) }
        #expect(throws: ModelError.self) { try EpochKeyID(bytes: [UInt8](repeating: 0, count: 15)) }
    }

    @Test func bodiesOpenOnlyWithTheirKeyAtTheirPlace() throws {
        let key = EpochKey()
        let sealed = try EncryptedBody.seal(body, key: key, binding: binding)
        #expect(sealed.keyID == key.id)
        #expect(try sealed.open(with: key, binding: binding) == body)
        let parsed = try EncryptedBody(cbor: sealed.cbor)
        #expect(parsed == sealed)
        // The plaintext is nowhere in the encoded body.
        let encoded = CBOREncoder.encode(sealed.cbor)
        #expect(!hexString(encoded).contains(hexString(Array("Buy milk".utf8))))
        // Another key, or any bound field changed, fails.
        #expect(throws: ModelError.self) { try sealed.open(with: EpochKey(), binding: binding) }
        var moved = binding
        moved.counter = 4
        #expect(throws: ModelError.self) { try sealed.open(with: key, binding: moved) }
        moved = binding
        moved.type = "entity.delete"
        #expect(throws: ModelError.self) { try sealed.open(with: key, binding: moved) }
        moved = binding
        moved.author = try DeviceID(bytes: [UInt8](repeating: 8, count: 32))
        #expect(throws: ModelError.self) { try sealed.open(with: key, binding: moved) }
        moved = binding
        moved.group = try GroupID(bytes: [UInt8](repeating: 9, count: 16))
        #expect(throws: ModelError.self) { try sealed.open(with: key, binding: moved) }
        // A flipped ciphertext bit fails.
        var c = sealed.ciphertext
        c[0] ^= 1
        #expect(throws: ModelError.self) {
            try EncryptedBody(keyID: key.id, nonce: sealed.nonce, ciphertext: c).open(with: key, binding: binding)
        }
        // Nonces are fresh: the same body sealed twice differs.
        #expect(try EncryptedBody.seal(body, key: key, binding: binding).ciphertext != sealed.ciphertext)
    }

    @Test func malformedBodiesAreRefused() throws {
        let key = EpochKey()
        let good = try EncryptedBody.seal(body, key: key, binding: binding).cbor
        guard case .map(var m) = good else {
            Issue.record("not a map")
            return
        }
        m[.text("x")] = 1
        #expect(throws: ModelError.self) { try EncryptedBody(cbor: .map(m)) }
        #expect(throws: ModelError.self) { try EncryptedBody(cbor: body) }
        #expect(throws: ModelError.self) {
            try EncryptedBody(
                keyID: key.id, nonce: [UInt8](repeating: 0, count: 12), ciphertext: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: ModelError.self) {
            try EncryptedBody(
                keyID: key.id, nonce: [UInt8](repeating: 0, count: 24), ciphertext: [UInt8](repeating: 0, count: 15))
        }
    }

    @Test func sealedKeysOpenOnlyForTheirDevice() throws {
        let key = EpochKey()
        let device = X25519.PrivateKey()
        let other = X25519.PrivateKey()
        let box = try SealedEpochKey.seal(key, group: group, to: author, noiseKey: device.publicKey)
        #expect(try box.open(group: group, keyID: key.id, with: device) == key)
        #expect(throws: ModelError.self) { try box.open(group: group, keyID: key.id, with: other) }
        let otherGroup = try GroupID(bytes: [UInt8](repeating: 9, count: 16))
        #expect(throws: ModelError.self) { try box.open(group: otherGroup, keyID: key.id, with: device) }
        #expect(throws: ModelError.self) { try box.open(group: group, keyID: EpochKey().id, with: device) }
        // Moved to another device's entry: the associated data names the device.
        let moved = try SealedEpochKey(
            device: try DeviceID(bytes: [UInt8](repeating: 8, count: 32)), ephemeral: box.ephemeral, box: box.box)
        #expect(throws: ModelError.self) { try moved.open(group: group, keyID: key.id, with: device) }
        #expect(try SealedEpochKey(cbor: box.cbor) == box)
    }

    @Test func keySharesAreBoundedSortedAndUnique() throws {
        let key = EpochKey()
        let devices = try (0..<3).map { i in
            (try DeviceID(bytes: [UInt8](repeating: UInt8(10 - i), count: 32)), X25519.PrivateKey())
        }
        let share = try EpochKeyShare.seal(
            key, group: group, rotate: true,
            to: devices.map { ($0.0, $0.1.publicKey) } + [(devices[0].0, devices[0].1.publicKey)])
        #expect(share.sealed.count == 3)
        #expect(
            share.sealed.map(\.device.bytes)
                == share.sealed.map(\.device.bytes).sorted { $0.lexicographicallyPrecedes($1) })
        for (id, secret) in devices {
            #expect(try share.box(for: id)?.open(group: group, keyID: share.keyID, with: secret) == key)
        }
        #expect(try EpochKeyShare(body: share.body) == share)
        #expect(throws: ModelError.self) { try EpochKeyShare(keyID: key.id, rotate: false, sealed: []) }
        #expect(throws: ModelError.self) {
            try EpochKeyShare(keyID: key.id, rotate: false, sealed: [share.sealed[0], share.sealed[0]])
        }
        // At the limit and one past it.
        let one = share.sealed[0]
        let many = try (0...EpochKeyShare.maxRecipients).map { i in
            try SealedEpochKey(
                device: DeviceID(bytes: [UInt8(i >> 8), UInt8(i & 0xff)] + [UInt8](repeating: 1, count: 30)),
                ephemeral: one.ephemeral, box: one.box)
        }
        #expect(try EpochKeyShare(keyID: key.id, rotate: false, sealed: Array(many.dropLast())).sealed.count == 256)
        #expect(throws: ModelError.self) { try EpochKeyShare(keyID: key.id, rotate: false, sealed: many) }
        let oversized = CBOR.textMap([
            "key": .bytes(key.id.bytes), "rotate": .bool(false), "sealed": .array(many.map(\.cbor)),
        ])
        #expect(throws: ModelError.self) { try EpochKeyShare(body: oversized) }
    }

    /// Both directions against tools/interop/group_crypto.py: Python opens Peerlog's bodies and
    /// boxes and refuses a tampered one; Peerlog opens Python's.
    @Test func anIndependentImplementationAgrees() throws {
        let key = EpochKey()
        let device = X25519.PrivateKey()
        let hex = { (b: [UInt8]) in JSON.string(hexString(b)) }
        let common: [(String, JSON)] = [
            ("key", hex(key.secret.copyBytes())), ("group", hex(group.bytes)), ("type", .string(binding.type)),
            ("author", hex(author.bytes)), ("counter", .int(binding.counter)),
        ]
        let sealed = try EncryptedBody.seal(body, key: key, binding: binding)
        var tampered = sealed.ciphertext
        tampered[tampered.count - 1] ^= 0x80
        let bad = try EncryptedBody(keyID: key.id, nonce: sealed.nonce, ciphertext: tampered)
        let box = try SealedEpochKey.seal(key, group: group, to: author, noiseKey: device.publicKey)
        let cases: [JSON] = [
            .object([("op", .string("open_body")), ("body", hex(CBOREncoder.encode(sealed.cbor)))] + common),
            .object([("op", .string("open_body")), ("body", hex(CBOREncoder.encode(bad.cbor)))] + common),
            .object([("op", .string("seal_body")), ("plaintext", hex(CBOREncoder.encode(body)))] + common),
            .object([
                ("op", .string("open_sealed")), ("secret", hex(device.rawRepresentation.copyBytes())),
                ("group", hex(group.bytes)),
                ("key_id", hex(key.id.bytes)), ("sealed", hex(CBOREncoder.encode(box.cbor))),
            ]),
            .object([
                ("op", .string("seal_key")), ("key", hex(key.secret.copyBytes())), ("group", hex(group.bytes)),
                ("device", hex(author.bytes)), ("noise", hex(device.publicKey.rawRepresentation)),
            ]),
            .object([("op", .string("key_id")), ("key", hex(key.secret.copyBytes()))]),
        ]
        let out = try JSON.parse(try TestSupport.python("group_crypto.py", input: JSON.array(cases).serialized()))
        guard case .array(let r) = out, r.count == cases.count else {
            Issue.record("\(out)")
            return
        }
        #expect(r[0]["plaintext"] == hex(CBOREncoder.encode(body)), "\(r[0])")
        #expect(r[1]["error"] != nil && r[1]["plaintext"] == nil, "python opened a tampered body: \(r[1])")
        guard case .string(let pyBody)? = r[2]["body"], case .string(let pySealed)? = r[4]["sealed"] else {
            Issue.record("\(out)")
            return
        }
        let fromPython = try EncryptedBody(cbor: try CBORDecoder.decodeStrict(TestSupport.bytes(hex: pyBody)))
        #expect(try fromPython.open(with: key, binding: binding) == body)
        #expect(r[3]["key"] == hex(key.secret.copyBytes()), "\(r[3])")
        let pyBox = try SealedEpochKey(cbor: try CBORDecoder.decodeStrict(TestSupport.bytes(hex: pySealed)))
        #expect(try pyBox.open(group: group, keyID: key.id, with: device) == key)
        #expect(r[5]["key_id"] == hex(key.id.bytes))
    }
}
