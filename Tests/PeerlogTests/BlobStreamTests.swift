import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

@testable import Peerlog

/// Reading a blob as it arrives (issue 34): the chunks held stream before the whole blob is
/// here, a stall says `blobUnavailable`, and the change stream says when the blob is whole.
/// Two `Peerlog`s pass receipts and chunks by hand (no network), so what Bob holds is exact.
@Suite struct BlobStreamTests {
    func send(_ group: GroupID, from: Peerlog, to: Peerlog) throws {
        let h = try TestReplica.holdings(group, of: from.replica)
        _ = try to.replica.ingest(receipts: h.receipts, envelopes: h.envelopes)
    }

    @Test(arguments: [false, true])
    func aBlobStreamsWhatIsHereBeforeItIsWhole(encrypted: Bool) async throws {
        let ann = try await Peerlog.temporary(deviceName: "ann")
        let bob = try await Peerlog.temporary(deviceName: "bob")
        let group = try await ann.createGroup(named: "album", encrypted: encrypted)
        try await ann.invite(bob.identity, to: group)
        try send(group, from: ann, to: bob)
        try await bob.acceptInvitation(to: group)
        try send(group, from: bob, to: ann)
        try send(group, from: ann, to: bob)

        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let original = Data((0..<2_500_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 4_096) })
        try original.write(to: URL(fileURLWithPath: dir + "/photo"))
        try await ann.put("photo", file: dir + "/photo", in: group)
        try send(group, from: ann, to: bob)
        let reference = try #require(try await bob.reference("photo", in: group, view: .tentative))
        #expect(reference.layout.chunkCount == 3)
        let seen = Collector(bob.changes(in: group))

        // Bob holds the hashes and chunk 0: it streams, then the stall is reported.
        try bob.replica.beginBlob(reference, for: group)
        let hashes = try #require(try ann.replica.storedBlob(reference.id)?.hashes)
        #expect(try bob.replica.acceptBlobHashes(reference.id, hashes))
        func chunk(_ i: Int) throws -> [UInt8] { try #require(try ann.replica.blobChunk(reference.id, index: i)) }
        #expect(try bob.replica.acceptBlobChunk(reference.id, index: 0, bytes: chunk(0)) == .written(held: 1))
        var streamed = Data()
        var failure: PeerlogError?
        do {
            for try await piece in bob.blobChunks("photo", in: group, stallTimeout: .milliseconds(300)) {
                streamed += piece
            }
        } catch let error as PeerlogError { failure = error }
        #expect(streamed == original.prefix(Int(reference.layout.plainBytes(ofChunk: 0))))
        #expect(failure?.code == .blobUnavailable, "\(String(describing: failure))")
        await #expect(throws: PeerlogError.self) { _ = try await bob.blobData("photo", in: group) }

        // The rest arrives: the whole value streams, and the change stream says it is whole.
        for i in [2, 1] { _ = try bob.replica.acceptBlobChunk(reference.id, index: i, bytes: chunk(i)) }
        var whole = Data()
        for try await piece in bob.blobChunks("photo", in: group) { whole += piece }
        #expect(whole == original)
        #expect(
            await seen.wait {
                $0.contains { if case .blobHeld(group, reference.id) = $0.event { true } else { false } }
            })
    }
}
