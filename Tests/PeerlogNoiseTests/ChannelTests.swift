import PeerlogChannel
import PeerlogCrypto
import PeerlogModel
import PeerlogNoise
import PeerlogTestSupport
import Testing

@Suite struct ChannelTests {
    @Test(arguments: [(UInt64(1), 1), (2, 7), (3, 100), (4, 70_000)].map { "\($0.0):\($0.1)" })
    func handshakeAndMessagesBothWays(schedule: String) throws {
        let parts = schedule.split(separator: ":").map { Int($0)! }
        var pair = ChannelPair(seed: UInt64(parts[0]), maxChunk: parts[1])
        pair.connect()
        #expect(pair.aEvents == [.established(Devices.bob.certificate)])
        #expect(pair.bEvents == [.established(Devices.alice.certificate)])
        #expect(pair.a.isEstablished && pair.b.isEstablished)
        #expect(pair.a.peerCertificate == Devices.bob.certificate)
        #expect(pair.a.handshakeHash != nil && pair.a.handshakeHash == pair.b.handshakeHash)
        let sizes = parts[1] == 1 ? [1, 300] : [1, 65518, 65519, 200_000]
        var rng = SeededRandom(seed: 99)
        var sent: [[UInt8]] = []
        for size in sizes {
            let message = rng.bytes(size)
            sent.append(message)
            try pair.send(fromA: true, message)
            try pair.send(fromA: false, message)
        }
        pair.pump()
        #expect(ChannelPair.delivered(pair.bEvents) == sent)
        #expect(ChannelPair.delivered(pair.aEvents) == sent)
        #expect(
            pair.a.statistics.messagesOut == UInt64(sizes.count) && pair.b.statistics.messagesIn == UInt64(sizes.count))
    }

    @Test func frameCountsAtTheFragmentBoundary() throws {
        var pair = ChannelPair()
        pair.connect()
        let before = pair.a.statistics.framesOut
        try pair.send(fromA: true, [UInt8](repeating: 1, count: 65518))
        #expect(pair.a.statistics.framesOut == before + 1)
        #expect(pair.toB.count == 65537)
        try pair.send(fromA: true, [UInt8](repeating: 2, count: 65519))
        #expect(pair.a.statistics.framesOut == before + 3)
        pair.pump()
        #expect(ChannelPair.delivered(pair.bEvents).map(\.count) == [65518, 65519])
    }

    @Test func refusedSends() throws {
        var pair = ChannelPair()
        #expect(throws: ChannelError(.notEstablished)) { try pair.a.send([1]) }
        pair.connect()
        #expect(throws: ChannelError(.emptyMessage)) { try pair.a.send([]) }
        #expect(throws: ChannelError.messageTooLarge(size: 4_194_305, limit: 4_194_304)) {
            try pair.a.send([UInt8](repeating: 0, count: 4_194_305))
        }
        _ = pair.a.close(reason: "done")
        #expect(throws: ChannelError(.closed)) { try pair.a.send([1]) }
    }

    @Test func fourMebibytesExactlyIsDelivered() throws {
        var pair = ChannelPair(seed: 5)
        pair.connect()
        var rng = SeededRandom(seed: 3)
        let message = rng.bytesFast(4_194_304)
        try pair.send(fromA: true, message)
        pair.pump()
        #expect(ChannelPair.delivered(pair.bEvents) == [message])
        #expect(pair.peakBuffered <= 65537 + 4_194_304)
    }

    @Test func oversizedMessageFromAPeerClosesTheConnection() throws {
        var config = ChannelConfiguration()
        config.maxMessageBytes = 4_194_305
        var pair = ChannelPair(aConfig: config)
        pair.connect()
        try pair.send(fromA: true, [UInt8](repeating: 7, count: 4_194_305))
        pair.pump()
        #expect(ChannelPair.delivered(pair.bEvents).isEmpty)
        #expect(ChannelPair.closeReason(pair.bEvents) == .protocolError("message exceeds 4194304 bytes"))
        #expect(ChannelPair.closeReason(pair.aEvents) == .remote("protocol error: message exceeds 4194304 bytes"))
        #expect(pair.b.bufferedBytes == 0)
        #expect(pair.peakBuffered <= 65537 + 4_194_304)
    }

    @Test func rekeyAtTheDefaultInterval() throws {
        var pair = ChannelPair()
        pair.connect()
        for i in 0..<4095 { try pair.send(fromA: true, [UInt8(i & 0xff)]) }
        #expect(pair.a.statistics.rekeysOut == 0)
        try pair.send(fromA: true, [1])
        #expect(pair.a.statistics.rekeysOut == 1)
        pair.pump()
        #expect(ChannelPair.delivered(pair.bEvents).count == 4096)
        #expect(pair.b.statistics.rekeysIn == 1)
        try pair.send(fromA: true, [2])
        try pair.send(fromA: false, [3])
        pair.pump()
        #expect(ChannelPair.delivered(pair.bEvents).count == 4097)
        #expect(ChannelPair.delivered(pair.bEvents).last == [2])
        #expect(ChannelPair.delivered(pair.aEvents) == [[3]])
        #expect(pair.b.statistics.rekeysOut == 0 && pair.b.statistics.rekeysIn == 1)
        #expect(!pair.a.isClosed && !pair.b.isClosed)
    }

    @Test func smallRekeyIntervalMustMatch() throws {
        let three = ChannelConfiguration(rekeyInterval: 3)
        var pair = ChannelPair(aConfig: three, bConfig: three)
        pair.connect()
        for i in 1...10 {
            try pair.send(fromA: true, [UInt8(i)])
            try pair.send(fromA: false, [UInt8(i)])
        }
        pair.pump()
        #expect(ChannelPair.delivered(pair.bEvents).count == 10 && ChannelPair.delivered(pair.aEvents).count == 10)
        #expect(pair.a.statistics.rekeysOut == 3 && pair.b.statistics.rekeysIn == 3)

        // A receiver that does not rekey reads 3 frames, then fails on the 4th.
        var lagging = ChannelPair(aConfig: three, bConfig: ChannelConfiguration(rekeyInterval: 0))
        lagging.connect()
        for i in 1...5 { try lagging.send(fromA: true, [UInt8(i)]) }
        lagging.pump()
        #expect(ChannelPair.delivered(lagging.bEvents) == [[1], [2], [3]])
        #expect(ChannelPair.closeReason(lagging.bEvents) == .protocolError("decrypt failed"))
    }

    @Test func wrongNetworkIDFailsTheHandshake() throws {
        var pair = ChannelPair(
            aConfig: ChannelConfiguration(networkID: "alpha"), bConfig: ChannelConfiguration(networkID: "beta"))
        pair.connect()
        #expect(
            pair.aEvents == [
                .closed(.protocolError("handshake failed: decrypt failed (wrong network id or corrupted message)"))
            ])
        #expect(pair.bEvents.isEmpty)
        #expect(pair.b.inputClosed() == [.closed(.truncated)])
        #expect(!pair.a.isEstablished && !pair.b.isEstablished)
        // An empty network id against a non-empty one fails the same way.
        var empty = ChannelPair(bConfig: ChannelConfiguration(networkID: "x"))
        empty.connect()
        #expect(
            ChannelPair.closeReason(empty.aEvents)
                == .protocolError("handshake failed: decrypt failed (wrong network id or corrupted message)"))
    }

    @Test func responderDeniesTheInitiator() throws {
        var pair = ChannelPair(bAuthorize: { _ in .deny("identity not authorized") })
        pair.take(pair.a.start(), fromA: true)
        let msg1 = Array(pair.toB)
        pair.toB = []
        pair.take(pair.b.receive(msg1), fromA: false)
        let msg2 = Array(pair.toA)
        pair.toA = []
        pair.take(pair.a.receive(msg2), fromA: true)
        // The initiator is established after writing msg3 and may already send; nothing reaches the responder's app.
        try pair.send(fromA: true, [1, 2, 3])
        pair.pump()
        let reason = "device \(Devices.alice.device): identity not authorized"
        #expect(pair.bEvents == [.closed(.unauthorized(reason))])
        #expect(pair.aEvents == [.established(Devices.bob.certificate), .closed(.remote(reason))])
        #expect(pair.b.peerCertificate == nil)
    }

    @Test func initiatorDeniesTheResponderWithoutSendingMessage3() throws {
        var pair = ChannelPair(aAuthorize: { _ in .deny("identity not authorized") })
        pair.connect()
        #expect(pair.aEvents == [.closed(.unauthorized("device \(Devices.bob.device): identity not authorized"))])
        #expect(pair.bEvents.isEmpty)
        #expect(pair.a.statistics.framesOut == 1)
        #expect(!pair.b.isEstablished)
    }

    @Test func certificateForAnotherNoiseKeyIsRejected() throws {
        let alice = Devices.alice
        let otherKey = try X25519.PrivateKey(SecureBytes([UInt8](repeating: 3, count: 32)))
        let wrongCertificate = try DeviceCertificate.issue(
            identityKey: alice.identityKey!, device: alice.device, noiseKey: otherKey.publicKey,
            name: "alice", createdAt: 1_700_000_000_000)
        #expect(wrongCertificate.verify() == .valid)
        let payload = HandshakePayload(
            certificate: wrongCertificate.encoded,
            proof: alice.signingKey.signature(for: Array("unused".utf8)))
        #expect(
            try msg3Refusal(payload.encoded)
                == .unauthorized("device \(alice.device): static key does not match its certificate"))
    }

    /// PROTOCOL.md §14.3: an identity that issues itself a certificate naming another device's id
    /// (with its own Noise key, so the handshake completes) cannot sign for that device's key; the
    /// responder refuses it before asking `authorize`, which here would let anyone in.
    @Test func aCertificateNamingAnotherDevicesIdIsRefusedWithoutItsKey() throws {
        let mallory = Devices.alice  // an admitted identity, whose initiator runs the handshake
        let victim = ReassemblyBudgetChannelTests.carol
        let forged = try DeviceCertificate.issue(
            identityKey: mallory.identityKey!, device: victim.device, noiseKey: mallory.noiseKey.publicKey,
            name: "carol", createdAt: 1_700_000_000_000)
        #expect(forged.verify() == .valid)
        // Signed with Mallory's own device key: the one she holds.
        let unprovable = HandshakePayload(
            certificate: forged.encoded,
            proof: mallory.signingKey.signature(
                for: SignatureContext.deviceNoise.message(
                    for: forged.identity.bytes + forged.noiseKey.rawRepresentation)))
        #expect(!unprovable.proves(forged))
        #expect(
            try msg3Refusal(unprovable.encoded)
                == .unauthorized("device \(victim.device): the device key's proof does not verify"))
        // Carol's genuine proof is over her own identity and Noise key, so it does not carry over.
        let borrowed = HandshakePayload(certificate: forged.encoded, proof: HandshakePayload(device: victim).proof)
        #expect(
            try msg3Refusal(borrowed.encoded)
                == .unauthorized("device \(victim.device): the device key's proof does not verify"))
        // A bare certificate (a version before the proof) gets a protocol error saying so.
        let bare = try msg3Refusal(mallory.certificate.encoded)
        if case .protocolError(let why) = bare {
            #expect(why.contains("without the device key's proof"))
        } else {
            Issue.record("a bare certificate was refused as \(String(describing: bare)), not a protocol error")
        }
        // The genuine payload passes: the harness's own handshake.
        var b = SecureChannel(role: .responder, device: Devices.bob, authorize: Devices.allowAll)
        var raw = try RawInitiator(device: mallory)
        #expect(try raw.handshake(with: &b) == [.established(mallory.certificate)])
    }

    /// Bob (responder) reads `payload` as Alice's msg3; the reason he closes with.
    private func msg3Refusal(_ payload: [UInt8]) throws -> ChannelCloseReason? {
        var b = SecureChannel(role: .responder, device: Devices.bob, authorize: Devices.allowAll)
        var handshake = try RawInitiator(device: Devices.alice).handshake
        let msg1 = try handshake.writeMessage(payload: [])
        guard case .write(let msg2) = b.receive(RawInitiator.frame(msg1)).first else { return nil }
        _ = try handshake.readMessage(Array(msg2.dropFirst(2)))
        let actions = b.receive(RawInitiator.frame(try handshake.writeMessage(payload: payload)))
        #expect(!ChannelPair.established(actions))
        guard case .closed(let reason) = actions.last else { return nil }
        return reason
    }

    @Test func badFramesCloseTheConnection() throws {
        var garbage = SecureChannel(role: .responder, device: Devices.bob, authorize: Devices.allowAll)
        var rng = SeededRandom(seed: 7)
        let garbageActions = garbage.receive(rng.bytes(700))
        #expect(garbage.isClosed)
        if case .closed(.protocolError) = garbageActions.last {
        } else {
            Issue.record("expected protocol error, got \(garbageActions)")
        }

        var zero = SecureChannel(role: .responder, device: Devices.bob, authorize: Devices.allowAll)
        #expect(zero.receive([0, 0, 1, 2]) == [.closed(.protocolError("zero-length frame"))])

        var oversized = SecureChannel(role: .responder, device: Devices.bob, authorize: Devices.allowAll)
        #expect(oversized.receive([0xff, 0xff]) == [.closed(.protocolError("frame of 65535 bytes exceeds 689 bytes"))])
        #expect(oversized.bufferedBytes == 0)
        #expect(oversized.receive([1, 2, 3]) == [])

        var pair = ChannelPair()
        pair.connect()
        let actions = pair.b.receive([0, 0])
        #expect(actions.last == .closed(.protocolError("zero-length frame")))
        var short = ChannelPair()
        short.connect()
        #expect(
            short.b.receive([0, 3, 1, 2, 3]).last
                == .closed(.protocolError("transport frame of 3 bytes is shorter than 17")))
    }

    @Test func handBuiltRecordsTheChannelNeverSends() throws {
        let cases: [(UInt8, [UInt8], String)] = [
            (0x04, [1], "unknown record type 0x4"),
            (0x00, [], "empty application message"),
            (0x02, [1], "last fragment without a first fragment"),
            (0x01, [], "empty fragment"),
        ]
        for (type, data, reason) in cases {
            var b = SecureChannel(role: .responder, device: Devices.bob, authorize: Devices.allowAll)
            var raw = try RawInitiator()
            #expect(try raw.handshake(with: &b) == [.established(Devices.alice.certificate)])
            let actions = b.receive(try raw.record(type, data))
            #expect(actions.last == .closed(.protocolError(reason)))
        }
        // A peer that never ends a fragmented message is cut off at the limit.
        var b = SecureChannel(
            role: .responder, device: Devices.bob, configuration: ChannelConfiguration(maxMessageBytes: 100_000),
            authorize: Devices.allowAll)
        var raw = try RawInitiator()
        _ = try raw.handshake(with: &b)
        #expect(b.receive(try raw.record(0x01, [UInt8](repeating: 1, count: 65518))) == [])
        #expect(b.bufferedBytes == 65518)
        #expect(
            b.receive(try raw.record(0x01, [UInt8](repeating: 1, count: 65518))).last
                == .closed(.protocolError("message exceeds 100000 bytes")))
        #expect(b.bufferedBytes == 0)
    }

    @Test func truncatedFrameThenEOF() throws {
        var pair = ChannelPair()
        pair.connect()
        try pair.send(fromA: true, [UInt8](repeating: 5, count: 1000))
        let half = Array(pair.toB.prefix(500))
        #expect(pair.b.receive(half) == [])
        #expect(pair.b.bufferedBytes == 500)
        #expect(pair.b.inputClosed() == [.closed(.truncated)])
        #expect(pair.b.inputClosed() == [])
    }

    @Test func bitFlipClosesOnFirstFailure() throws {
        var pair = ChannelPair()
        pair.connect()
        for i in 1...3 { try pair.send(fromA: true, [UInt8](repeating: UInt8(i), count: 50)) }
        var wire = Array(pair.toB)
        pair.toB = []
        #expect(wire.count == 3 * (2 + 16 + 1 + 50))
        wire[69 + 30] ^= 0x04
        let actions = pair.b.receive(wire)
        #expect(ChannelPair.delivered(actions) == [[UInt8](repeating: 1, count: 50)])
        #expect(actions.last == .closed(.protocolError("decrypt failed")))
        if case .write = actions[actions.count - 2] {} else { Issue.record("expected a close record before closing") }
        #expect(pair.b.receive(wire) == [])
    }

    @Test func closeRecord() throws {
        var pair = ChannelPair()
        pair.connect()
        let actions = pair.a.close(reason: "bye")
        #expect(actions.count == 2 && actions.last == .closed(.local("bye")))
        pair.take(actions, fromA: true)
        pair.pump()
        #expect(pair.bEvents.last == .closed(.remote("bye")))
        #expect(pair.b.isClosed)
        #expect(pair.b.receive([0, 1, 2]) == [])
        #expect(pair.b.close(reason: "again") == [])
        // Before the handshake completes there are no keys, so no close record.
        var early = SecureChannel(role: .initiator, device: Devices.alice, authorize: Devices.allowAll)
        _ = early.start()
        #expect(early.close(reason: "x") == [.closed(.local("x"))])
    }

    @Test func handshakeTimeout() throws {
        var pending = SecureChannel(role: .initiator, device: Devices.alice, authorize: Devices.allowAll)
        _ = pending.start()
        #expect(pending.handshakeTimedOut() == [.closed(.handshakeTimeout)])
        #expect(ChannelCloseReason.handshakeTimeout.description == "handshake timed out")
        #expect(ChannelConfiguration().handshakeTimeout == .seconds(10))
        var pair = ChannelPair()
        pair.connect()
        #expect(pair.a.handshakeTimedOut() == [])
        #expect(pair.a.isEstablished)
    }

    @Test func floodKeepsBuffersBounded() throws {
        var pair = ChannelPair(seed: 11, maxChunk: 1500)
        pair.connect()
        let message = [UInt8](repeating: 0xab, count: 60_000)
        for _ in 0..<100 { try pair.send(fromA: true, message) }
        pair.pump()
        #expect(ChannelPair.delivered(pair.bEvents).count == 100)
        #expect(pair.peakBuffered <= 65537)

        // Fragments of a message larger than the limit: the receiver holds at most one reassembly.
        var big = ChannelConfiguration()
        big.maxMessageBytes = 12_000_000
        var flood = ChannelPair(aConfig: big, seed: 12, maxChunk: 4000)
        flood.connect()
        try flood.send(fromA: true, [UInt8](repeating: 1, count: 12_000_000))
        flood.pump()
        #expect(flood.peakBuffered <= 65537 + 4_194_304)
        #expect(ChannelPair.closeReason(flood.bEvents) == .protocolError("message exceeds 4194304 bytes"))
        #expect(flood.b.bufferedBytes == 0)
    }
}

extension SeededRandom {
    /// Many random bytes quickly (8 per step).
    mutating func bytesFast(_ n: Int) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(n + 8)
        while out.count < n { withUnsafeBytes(of: next()) { out += $0 } }
        return Array(out.prefix(n))
    }
}
