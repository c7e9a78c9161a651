import Foundation
import PeerlogCapture
import PeerlogCaptureTools
import PeerlogEncoding
import PeerlogModel
import PeerlogSync
import Testing

@Suite struct CaptureFileTests {
    @Test func recordsRoundTripThroughPcapng() throws {
        let records =
            (0..<7).map {
                Fixtures.record($0, data: Array("message \($0)".utf8) + [UInt8](repeating: UInt8($0), count: $0))
            }
            + [
                Fixtures.record(7, data: Fixtures.bob.certificate.encoded, kind: .opened),
                Fixtures.record(8, data: Array("bye".utf8), kind: .closed),
            ]
        let (_, bytes) = try Fixtures.written(records)
        let read = try CaptureFile(bytes: bytes)
        #expect(read.records == records)
        #expect(read.connections == [1, 2, 3])
        // One interface block per connection, messages carry epb_flags with the direction.
        let packets = try PacketFile(bytes: bytes)
        #expect(packets.interfaces == [CaptureRecord.linkType, CaptureRecord.linkType, CaptureRecord.linkType])
        #expect(packets.packets[0].flags == Pcapng.inboundFlag)
        #expect(packets.packets[1].flags == Pcapng.outboundFlag)
        #expect(packets.packets[7].flags == nil)
    }

    @Test func everyTruncationIsOneErrorNamingTheOffset() throws {
        let (_, bytes) = try Fixtures.written(
            (0..<3).map { Fixtures.record($0, data: Array(repeating: 0xAB, count: 90)) })
        let full = try CaptureFile(bytes: bytes).records.count
        var errors = 0
        for cut in 0..<bytes.count {
            do {
                let partial = try CaptureFile(bytes: Array(bytes.prefix(cut)))
                #expect(partial.records.count < full)  // only at block boundaries
            } catch let e as CaptureError {
                errors += 1
                #expect(e.offset != nil || cut < 4 || e.detail.contains("no Peerlog"), "cut \(cut): \(e)")
                #expect("\(e)".contains("offset") || cut < 4, "cut \(cut): \(e)")
            }
        }
        #expect(errors > bytes.count - 10)
    }

    @Test func corruptLengthsAndHeadersAreNamed() throws {
        let (_, bytes) = try Fixtures.written([Fixtures.record(0, data: [1, 2, 3])])
        let shbLength = Int(bytes[4]) | Int(bytes[5]) << 8
        var odd = bytes
        odd[shbLength + 4] = 13  // interface block length 13: not a multiple of 4
        #expect(throws: CaptureError.self) { try CaptureFile(bytes: odd) }
        do { _ = try CaptureFile(bytes: odd) } catch let e as CaptureError { #expect(e.offset == shbLength + 4) }

        var trailer = bytes
        trailer[bytes.count - 4] ^= 0x40  // last block's trailing length differs
        do {
            _ = try CaptureFile(bytes: trailer)
            Issue.record("accepted a bad trailer")
        } catch let e as CaptureError {
            #expect(e.detail.contains("trailer"), "\(e)")
            #expect(e.offset == bytes.count - 4)
        }

        var huge = bytes
        huge[shbLength + 7] = 0x7f  // interface block claims ~2 GiB
        do {
            _ = try CaptureFile(bytes: huge)
            Issue.record("accepted a huge block")
        } catch let e as CaptureError {
            #expect(e.detail.contains("limit"), "\(e)")
        }

        do {
            _ = try CaptureFile(bytes: Array("hello, not a capture".utf8))
            Issue.record("accepted text")
        } catch let e as CaptureError {
            #expect(e.detail.contains("not a pcapng or pcap file"))
            #expect(e.offset == 0)
        }

        // A record header with an unknown kind, and one shorter than the header.
        var badKind = Fixtures.record(0, data: [1]).packet
        badKind[1] = 9
        #expect(throws: CaptureError.self) { try CaptureRecord(packet: badKind, time: 0, offset: 100) }
        do { _ = try CaptureRecord(packet: Array(badKind.prefix(20)), time: 0, offset: 100) } catch let e
            as CaptureError
        {
            #expect(e.offset == 100)
            #expect(e.detail.contains("76-byte header"))
        }
    }

    @Test func rotationStartsNumberedFilesAtTheSizeLimit() throws {
        #expect(throws: CaptureError.self) {
            try CaptureWriter(
                path: Fixtures.temporaryFile("small.pcapng"),
                options: .init(maxBytes: CaptureWriter.minRotationBytes - 1))
        }
        let records = (0..<20).map { Fixtures.record($0, data: [UInt8](repeating: 7, count: 10_000)) }
        let path = Fixtures.temporaryFile("rotating.pcapng")
        let w = try CaptureWriter(path: path, options: .init(maxBytes: CaptureWriter.minRotationBytes))
        for r in records { #expect(w.write(r) == nil) }
        w.close()
        // About 10 KB per record: a file takes 7 records before it passes 64 KiB.
        #expect(w.files == [path, path + ".1", path + ".2"])
        var all = [CaptureRecord]()
        for file in w.files {
            let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as! Int
            #expect(size < CaptureWriter.minRotationBytes + 10_200)
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as! Int
            #expect(mode == 0o600)
            all += try CaptureFile(path: file).records
        }
        #expect(all == records)
    }

    @Test func omittingBodiesKeepsCIDsAndDropsTheBody() throws {
        let secret = "a secret the capture must not hold"
        let receipts = try (1...3).map {
            try Fixtures.receipt(counter: $0, body: .textMap(["key": "k", "value": .text(secret)]))
        }
        let message = SyncMessage.receipts(group: Fixtures.group, items: receipts.map(\.encoded)).encoded()
        let (_, bytes) = try Fixtures.written([Fixtures.record(0, data: message)], options: .init(omitBodies: true))
        #expect(!String(decoding: bytes, as: UTF8.self).contains(secret))
        let record = try CaptureFile(bytes: bytes).records[0]
        #expect(record.bodiesOmitted)
        let view = RecordView(index: 1, record: record)
        #expect(view.items.map(\.cid) == receipts.map(\.cid))
        #expect(view.items.allSatisfy { $0.fields.contains { $0.0 == "body" && $0.1.hasPrefix("omitted") } })
    }

    @Test func recordViewNamesMessagesAndItems() throws {
        let r = try Fixtures.receipt(counter: 1)
        let e = try Envelope.sign(
            group: Fixtures.group, seq: 1, receipt: r.cid, term: 0, receivedAt: 5, key: Fixtures.alice.signingKey)
        let m = SyncMessage.commits(group: Fixtures.group, receipts: [r.encoded], envelopes: [e.encoded]).encoded()
        let view = RecordView(index: 1, record: Fixtures.record(0, data: m))
        #expect(view.type == "commits")
        #expect(view.group == Fixtures.group)
        #expect(view.items.map(\.kind) == [.receipt, .envelope])
        #expect(view.items.map(\.cid) == [r.cid, r.cid])
        #expect(view.items[1].fields.contains { $0 == ("seq", "1") })
        let diag = view.expanded?.diagnostic() ?? ""
        #expect(diag.contains("\"entity.put\""), "payloads decoded: \(diag)")

        let junk = RecordView(index: 2, record: Fixtures.record(1, data: [0xff, 0x00]))
        #expect(junk.type == "undecodable")
        #expect(junk.problem != nil)
    }
}
