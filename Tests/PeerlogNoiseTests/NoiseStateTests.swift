import PeerlogCrypto
import PeerlogNoise
import PeerlogTestSupport
import Testing

@Suite struct NoiseStateTests {
    let key = [UInt8](repeating: 7, count: 32)

    @Test func failedDecryptLeavesNonceAndLaterDecryptWorks() throws {
        var sender = try NoiseCipherState(key: key)
        var receiver = try NoiseCipherState(key: key)
        let ciphertext = try sender.encrypt(ad: [1, 2], Array("hello".utf8))
        var tampered = ciphertext
        tampered[0] ^= 0x01
        #expect(throws: NoiseError(.decryptFailed)) { try receiver.decrypt(ad: [1, 2], tampered) }
        #expect(throws: NoiseError(.decryptFailed)) { try receiver.decrypt(ad: [9], ciphertext) }
        #expect(throws: NoiseError(.decryptFailed)) { try receiver.decrypt([1, 2, 3]) }
        #expect(receiver.nonce == 0)
        #expect(try receiver.decrypt(ad: [1, 2], ciphertext) == Array("hello".utf8))
        #expect(receiver.nonce == 1)
    }

    @Test func maximumNonceIsNeverUsed() throws {
        var cipher = try NoiseCipherState(key: key, nonce: UInt64.max - 1)
        let last = try cipher.encrypt([1])
        #expect(cipher.nonce == UInt64.max)
        #expect(throws: NoiseError(.nonceExhausted)) { try cipher.encrypt([1]) }
        #expect(cipher.nonce == UInt64.max)
        var receiver = try NoiseCipherState(key: key, nonce: UInt64.max)
        #expect(throws: NoiseError(.nonceExhausted)) { try receiver.decrypt(last) }
        var before = try NoiseCipherState(key: key, nonce: UInt64.max - 1)
        #expect(try before.decrypt(last) == [1])
    }

    @Test func rekeyIsEncryptOfZerosAtMaxNonceAndKeepsTheNonce() throws {
        var a = try NoiseCipherState(key: key, nonce: 5)
        a.rekey()
        #expect(a.nonce == 5)
        let nonceMax = [UInt8](repeating: 0, count: 4) + [UInt8](repeating: 0xff, count: 8)
        let expectedKey = Array(
            try ChaChaPoly.seal([UInt8](repeating: 0, count: 32), key: SecureBytes(key), nonce: nonceMax).prefix(32))
        var b = try NoiseCipherState(key: expectedKey, nonce: 5)
        var old = try NoiseCipherState(key: key, nonce: 5)
        let sealed = try a.encrypt([42])
        #expect(try b.decrypt(sealed) == [42])
        #expect(throws: NoiseError(.decryptFailed)) { try old.decrypt(sealed) }
    }

    @Test func messageLengthLimit() throws {
        var cipher = try NoiseCipherState(key: key)
        #expect(try cipher.encrypt([UInt8](repeating: 0, count: 65519)).count == 65535)
        #expect(throws: NoiseError(.messageTooLong)) { try cipher.encrypt([UInt8](repeating: 0, count: 65520)) }
        #expect(throws: NoiseError(.messageTooLong)) { try cipher.decrypt([UInt8](repeating: 0, count: 65536)) }
        var hs = try xx(initiator: true)
        #expect(throws: NoiseError(.messageTooLong)) {
            try hs.writeMessage(payload: [UInt8](repeating: 0, count: 65535 - 31))
        }
    }

    @Test func protocolNames() throws {
        #expect(try NoiseProtocol(name: "Noise_XX_25519_ChaChaPoly_BLAKE2b").pattern == .xx)
        #expect(try NoiseProtocol(name: "Noise_IK_25519_ChaChaPoly_SHA256").hash == .sha256)
        for bad in [
            "Noise_XX_448_ChaChaPoly_BLAKE2b", "Noise_XX_25519_AESGCM_SHA256", "Noise_KK_25519_ChaChaPoly_SHA256",
            "Noise_XX_25519_ChaChaPoly_SHA512", "Noise_XX_25519_ChaChaPoly", "XX",
            "Noise_XXpsk0_25519_ChaChaPoly_SHA256",
        ] {
            #expect(throws: NoiseError(.unsupportedProtocol, bad)) { try NoiseProtocol(name: bad) }
        }
        #expect(throws: NoiseError(.missingKey, "local static")) {
            try NoiseHandshake(
                protocol: NoiseProtocol(name: "Noise_XX_25519_ChaChaPoly_SHA256"), initiator: true, prologue: [],
                localStatic: nil)
        }
        #expect(throws: NoiseError(.missingKey, "remote static")) {
            try NoiseHandshake(
                protocol: NoiseProtocol(name: "Noise_IK_25519_ChaChaPoly_SHA256"), initiator: true, prologue: [],
                localStatic: X25519.PrivateKey())
        }
    }

    @Test(arguments: [
        String(repeating: "00", count: 32),
        "01" + String(repeating: "00", count: 31),
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
    ])
    func lowOrderRemoteEphemeralFailsTheHandshake(point: String) throws {
        var initiator = try xx(initiator: true)
        var responder = try xx(initiator: false)
        _ = try initiator.writeMessage(payload: [])
        // Responder: reading a low-order e is fine, but the ee DH when writing msg2 must fail.
        _ = try responder.readMessage(hexBytes(point))
        #expect(throws: NoiseError(.lowOrderPublicKey)) { try responder.writeMessage(payload: []) }
        #expect(throws: NoiseError(.handshakeAborted)) { try responder.writeMessage(payload: []) }
        // Initiator: a msg2 whose e is low order fails at the ee DH while reading.
        var fresh = try xx(initiator: false)
        var initiator2 = try xx(initiator: true)
        _ = try fresh.readMessage(try initiator2.writeMessage(payload: []))
        var msg2 = try fresh.writeMessage(payload: [])
        msg2.replaceSubrange(0..<32, with: hexBytes(point))
        #expect(throws: NoiseError(.lowOrderPublicKey)) { try initiator2.readMessage(msg2) }
    }

    @Test func outOfTurnAndIncompleteHandshakes() throws {
        var initiator = try xx(initiator: true)
        var responder = try xx(initiator: false)
        #expect(throws: NoiseError(.messageOutOfTurn)) { try initiator.readMessage([UInt8](repeating: 9, count: 32)) }
        #expect(throws: NoiseError(.messageOutOfTurn)) { try responder.writeMessage(payload: []) }
        #expect(throws: NoiseError(.handshakeNotComplete)) { try initiator.split() }
        let msg1 = try initiator.writeMessage(payload: [])
        #expect(throws: NoiseError(.messageOutOfTurn)) { try initiator.writeMessage(payload: []) }
        #expect(throws: NoiseError(.messageTooShort)) { try responder.readMessage(Array(msg1.prefix(31))) }
        var responder2 = try xx(initiator: false)
        _ = try responder2.readMessage(msg1)
        let msg2 = try responder2.writeMessage(payload: [1])
        _ = try initiator.readMessage(msg2)
        let msg3 = try initiator.writeMessage(payload: [2])
        #expect(try responder2.readMessage(msg3) == [2])
        #expect(initiator.isComplete && responder2.isComplete)
        #expect(throws: NoiseError(.messageOutOfTurn)) { try initiator.writeMessage(payload: []) }
        #expect(throws: NoiseError(.messageOutOfTurn)) { try responder2.readMessage(msg3) }
        #expect(initiator.handshakeHash == responder2.handshakeHash)
    }

    @Test func tamperedHandshakeMessageFails() throws {
        for index in [40, 80, 95] {
            var initiator = try xx(initiator: true)
            var responder = try xx(initiator: false)
            _ = try responder.readMessage(try initiator.writeMessage(payload: []))
            var msg2 = try responder.writeMessage(payload: [1, 2, 3])
            msg2[index] ^= 0x80
            #expect(throws: NoiseError(.decryptFailed)) { try initiator.readMessage(msg2) }
            #expect(throws: NoiseError(.handshakeAborted)) { try initiator.writeMessage(payload: []) }
        }
    }

    private func xx(initiator: Bool) throws -> NoiseHandshake {
        try NoiseHandshake(
            protocol: NoiseProtocol(name: "Noise_XX_25519_ChaChaPoly_BLAKE2b"), initiator: initiator, prologue: [1],
            localStatic: X25519.PrivateKey())
    }
}
