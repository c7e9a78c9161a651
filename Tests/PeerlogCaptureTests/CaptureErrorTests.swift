import PeerlogCapture
import PeerlogCaptureTools
import Testing

/// CaptureError: a code per kind of problem, the offset, equality on the code only, and no key
/// material from a key log in any description.
@Suite struct CaptureErrorTests {
    @Test func codesSayWhatKindOfProblemAndKeysStayOut() {
        let secret = String(repeating: "ab", count: 32)
        do {
            _ = try KeyLogEntry.parse("PEERLOG_NOISE_KEYS \(secret) \(secret)\n")
            Issue.record("accepted a short line")
        } catch let e as CaptureError {
            #expect(
                e.code == .malformedKeyLog
                    && e.description == "key log line 1 is malformed (expected PEERLOG_NOISE_KEYS and five fields)")
            #expect(!e.description.contains(secret) && e.file.hasPrefix("PeerlogCapture/"))
        } catch { Issue.record("not a CaptureError: \(error)") }
        do {
            _ = try PacketFile(bytes: [1, 2])
            Issue.record("accepted two bytes")
        } catch let e as CaptureError {
            #expect(e.code == .malformedFile && e.offset == 0 && e == CaptureError(offset: 7, "other"))
            #expect(e != CaptureError(.notReplayable, offset: nil, "other"))
        } catch { Issue.record("not a CaptureError: \(error)") }
    }
}
