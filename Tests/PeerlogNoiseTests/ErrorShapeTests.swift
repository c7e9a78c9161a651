import PeerlogChannel
import PeerlogNoise
import Testing

/// NoiseError and ChannelError: a code, where it was raised, equality on the code only, and
/// descriptions that hold neither keys nor message contents.
@Suite struct ErrorShapeTests {
    @Test func noiseErrorsCompareByCodeAndCarryTheirThrowSite() throws {
        let key = [UInt8](repeating: 0x5a, count: 32)
        var sender = try NoiseCipherState(key: key)
        var receiver = try NoiseCipherState(key: key)
        var sealed = try sender.encrypt(ad: [], Array("s3cret".utf8))
        sealed[0] ^= 1
        do {
            _ = try receiver.decrypt(ad: [], sealed)
            Issue.record("decrypted a tampered message")
        } catch let e as NoiseError {
            #expect(
                e.code == .decryptFailed && e == NoiseError(.decryptFailed) && e.file.hasPrefix("PeerlogNoise/"),
                "\(e) \(e.file):\(e.line)")
            #expect(e.description == "decrypt failed")
            #expect(e != NoiseError(.nonceExhausted))
        }
        #expect(NoiseError(.missingKey, "local static").description == "missing key: local static")
        #expect(NoiseError.Code.handshakeAborted.name == "handshakeAborted")
        #expect(NoiseError(.handshakeAborted).description == "handshake aborted after an earlier failure")
    }

    @Test func channelErrorsCompareByCodeAndSaySizesNotContents() throws {
        var pair = ChannelPair()
        pair.connect()
        let big = [UInt8](repeating: 0x73, count: 4_194_305)
        do {
            _ = try pair.a.send(big)
            Issue.record("sent an oversized message")
        } catch let e as ChannelError {
            #expect(e.code == .messageTooLarge && e.description == "message of 4194305 bytes exceeds 4194304 bytes")
            #expect(e == ChannelError.messageTooLarge(size: 1, limit: 0), "equality ignores the sizes, file and line")
            #expect(e.file.hasPrefix("PeerlogChannel/"))
        }
    }
}
