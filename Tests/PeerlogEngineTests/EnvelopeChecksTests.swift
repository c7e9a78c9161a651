import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import Testing

/// `Replica.checkEnvelopes`: a run received whole is proven by its tree built once, and that
/// shortcut accepts exactly the items each item's own path check accepts.
struct EnvelopeChecksTests {
    static let key = try! Ed25519.PrivateKey(seed: SecureBytes([UInt8](repeating: 0x05, count: 32)))
    static let group = try! GroupID(bytes: [UInt8](repeating: 0x07, count: GroupID.length))

    static func cid(_ n: Int) -> CID {
        try! CID(bytes: [0x01, 0x71, 0x12, 0x20] + [UInt8](repeating: UInt8(n % 251), count: 31) + [UInt8(n / 251)])
    }

    static func run(_ size: Int, firstSeq: UInt64 = 10) throws -> [Envelope] {
        try EnvelopeRun.sign(
            group: group, firstSeq: firstSeq, receipts: (0..<size).map(cid), term: 0, receivedAt: 5, key: key)
    }

    /// An item of `e`'s run at `e`'s seq naming `receipt`, with `path`.
    static func item(like e: Envelope, receipt: CID? = nil, path: [[UInt8]]? = nil) -> Envelope {
        Envelope(item: e.run!, seq: e.seq, receipt: receipt ?? e.receipt, path: path ?? e.path, signature: e.signature)
    }

    /// The batch's verdicts, checked against each item's own `checkPosition`.
    func expectSameVerdicts(_ batch: [Envelope], proven: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let checked = Replica.checkEnvelopes(batch)
        for (i, e) in batch.enumerated() {
            let own = e.checkPosition()
            #expect((checked[i].problem == nil) == (own.result == .valid), "item \(i)", sourceLocation: sourceLocation)
            #expect(checked[i].leaf == own.leaf, "item \(i)", sourceLocation: sourceLocation)
        }
        #expect(Replica.wholeRunLeaves(batch).count == proven, sourceLocation: sourceLocation)
    }

    @Test func aWholeRunIsProvenByItsTreeAndAPartOneItemByItem() throws {
        let items = try Self.run(40)
        expectSameVerdicts(items, proven: 40)
        expectSameVerdicts(Array(items.shuffled()), proven: 40)
        expectSameVerdicts(Array(items.prefix(20)), proven: 0)
        // Two runs in one batch, one whole and one not.
        expectSameVerdicts(items + Array(try Self.run(8, firstSeq: 50).prefix(5)), proven: 40)
    }

    @Test func aTamperedItemIsRefusedAndTheRestOfItsRunStillProven() throws {
        var items = try Self.run(40)
        // A wrong path: only that item fails.
        var wrongPath = items[5].path
        wrongPath[0] = [UInt8](repeating: 0, count: 32)
        items[5] = Self.item(like: items[5], path: wrongPath)
        expectSameVerdicts(items, proven: 39)
        #expect(Replica.checkEnvelopes(items)[5].problem?.contains("not in its run's Merkle root") == true)

        // A second item at seq 17 naming another receipt: after the genuine one, only it fails;
        // before it, the run's tree does not match and every item is checked on its own.
        let genuine = try Self.run(40)
        let forged = Self.item(like: genuine[7], receipt: Self.cid(999))
        expectSameVerdicts(genuine + [forged], proven: 40)
        expectSameVerdicts([forged] + genuine, proven: 0)
        #expect(Replica.checkEnvelopes([forged] + genuine).map { $0.problem != nil }.filter { $0 }.count == 1)
    }
}
