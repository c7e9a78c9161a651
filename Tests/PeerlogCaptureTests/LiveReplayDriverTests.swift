import PeerlogCapture
import PeerlogCaptureTools
import PeerlogModel
import PeerlogSync
import Testing

@Suite struct LiveReplayDriverTests {
    func capture() throws -> CaptureFile {
        let receipts = try (1...4).map { try Fixtures.receipt(counter: $0) }
        let envelope = try Envelope.sign(
            group: Fixtures.group, seq: 1, receipt: receipts[0].cid, term: 0, receivedAt: 1,
            key: Fixtures.alice.signingKey)
        func inbound(_ i: Int, _ m: SyncMessage) -> CaptureRecord {
            CaptureRecord(
                time: UInt64(i) * 1000, kind: .message, direction: .inbound, connection: 4, local: Fixtures.bob.device,
                peer: Fixtures.alice.device, data: m.encoded())
        }
        let records = [
            inbound(0, .hello(versions: [1], capabilities: ["commits"], groups: [Fixtures.group])),
            inbound(1, .credit(8)),
            inbound(2, .commits(group: Fixtures.group, receipts: [receipts[0].encoded], envelopes: [envelope.encoded])),
            inbound(3, .receipts(group: Fixtures.group, items: receipts[1...].map(\.encoded))),
            CaptureRecord(
                time: 4000, kind: .message, direction: .outbound, connection: 4, local: Fixtures.bob.device,
                peer: Fixtures.alice.device, data: SyncMessage.credit(1).encoded()),
        ]
        let (_, bytes) = try Fixtures.written(records)
        return try CaptureFile(bytes: bytes)
    }

    @Test func sendsRecordedBatchesUnderCreditOnceTheGroupIsAccepted() throws {
        let d = try LiveReplayDriver(capture: capture(), connection: 4)
        #expect(d.batches.count == 2)
        let hello = try SyncMessage.decode(d.start()[0], limits: SyncLimits())
        #expect(hello == .hello(versions: [1], capabilities: [], groups: [Fixtures.group]))
        #expect(d.next() == nil)  // no hello from the peer yet
        _ = try d.receive(SyncMessage.hello(versions: [1], capabilities: [], groups: []).encoded())
        _ = try d.receive(SyncMessage.credit(2).encoded())
        #expect(d.next() == nil)  // group not accepted yet
        #expect(d.unaccepted == [Fixtures.group])
        _ = try d.receive(SyncMessage.vector(group: Fixtures.group, committed: 0, authors: []).encoded())
        // The peer lacks `commits`: the batch goes as receipts + envelopes (two credits).
        let first = try #require(d.next()).map { try SyncMessage.decode($0, limits: SyncLimits()).type }
        #expect(first == ["receipts", "envelopes"])
        #expect(d.next() == nil)  // credit spent
        #expect(
            try d.receive(SyncMessage.request(group: Fixtures.group, id: 9, what: .after(0)).encoded()).map {
                try SyncMessage.decode($0, limits: SyncLimits())
            } == [.done(group: Fixtures.group, id: 9)])
        _ = try d.receive(SyncMessage.credit(1).encoded())
        #expect(try #require(d.next()).count == 1)
        #expect(d.done && !d.acknowledged)
        _ = try d.receive(SyncMessage.credit(2).encoded())
        #expect(d.acknowledged)
        #expect(d.itemsSent == 5)
        #expect(throws: LiveReplayDriver.Failure.self) {
            try d.receive(SyncMessage.error(code: "protocol", message: "no").encoded())
        }
    }

    @Test func refusesCapturesWithoutBodiesOrBatches() throws {
        let c = try capture()
        #expect(throws: CaptureError.self) { try LiveReplayDriver(capture: c, connection: 4, direction: .outbound) }
        var redacted = c.records
        for i in redacted.indices { redacted[i].bodiesOmitted = true }
        let (_, bytes) = try Fixtures.written(redacted)
        #expect(throws: CaptureError.self) { try LiveReplayDriver(capture: CaptureFile(bytes: bytes), connection: 4) }
    }
}
