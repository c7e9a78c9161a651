import Foundation
import PeerlogCapture
import PeerlogCaptureTools
import Testing

/// `write` only queues; the writer's own queue puts records in the file shortly after, without
/// waiting for `close()` (a capture read while the daemon runs still sees recent traffic).
@Suite struct CaptureWriterQueueTests {
    @Test func queuedRecordsReachTheFileWithoutClose() throws {
        let path = Fixtures.temporaryFile("queued.pcapng")
        let w = try CaptureWriter(path: path)
        defer { w.close() }
        let records = (0..<50).map { Fixtures.record($0, data: [UInt8](repeating: 3, count: 100)) }
        for r in records { #expect(w.write(r) == nil) }
        let deadline = Date().addingTimeInterval(60)  // returns as soon as they are there
        while w.recordCount < records.count, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(w.recordCount == records.count)
        #expect(try CaptureFile(path: path).records == records)
    }

    @Test func recordsWrittenAfterCloseAreDropped() throws {
        let path = Fixtures.temporaryFile("closed.pcapng")
        let w = try CaptureWriter(path: path)
        #expect(w.write(Fixtures.record(1, data: [1])) == nil)
        #expect(w.close() == nil)
        #expect(w.write(Fixtures.record(2, data: [2])) == nil)
        #expect(try CaptureFile(path: path).records == [Fixtures.record(1, data: [1])])
        #expect(w.recordCount == 1)
    }
}
