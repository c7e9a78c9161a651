import Testing

@testable import PeerlogNode

/// The control socket's one grammar: what `ControlClient` writes is what the daemon reads.
struct ControlRequestTests {
    @Test(arguments: [
        ControlRequest.ping, .status, .captureStop,
        .captureStart(path: "/tmp/a.pcapng", maxBytes: nil, omitBodies: false),
        .captureStart(path: "/tmp/with two  spaces.pcapng", maxBytes: 1_048_576, omitBodies: true),
    ])
    func roundTrips(_ request: ControlRequest) throws {
        #expect(try ControlRequest.parse(request.line).get() == request)
    }

    @Test func linesAreTheWireText() {
        #expect(ControlRequest.status.line == "status")
        #expect(ControlRequest.captureStop.line == "capture stop")
        #expect(
            ControlRequest.captureStart(path: "/x y", maxBytes: nil, omitBodies: true).line
                == "capture start omit-bodies=1 max-bytes=0 /x y")
        #expect(
            ControlRequest.captureStart(path: "/x", maxBytes: 4096, omitBodies: false).line
                == "capture start omit-bodies=0 max-bytes=4096 /x")
    }

    @Test func refusalsSayWhatTheDaemonReplies() {
        func problem(_ line: String) -> String? {
            if case .failure(let invalid) = ControlRequest.parse(line) { return invalid.description }
            return nil
        }
        #expect(problem("stats") == "unknown request \"stats\" (known: status, ping, capture start, capture stop)")
        #expect(problem("capture pause") == "unknown capture request (known: capture start, capture stop)")
        let usage = "usage: capture start omit-bodies=0|1 max-bytes=N /absolute/path"
        #expect(problem("capture start omit-bodies=0 max-bytes=0 relative.pcapng") == usage)
        #expect(problem("capture start omit-bodies=0 max-bytes=lots /a") == usage)
        #expect(problem("capture start max-bytes=0 omit-bodies=0 /a") == usage)
        #expect(problem("capture start omit-bodies=0 max-bytes=0") == usage)
    }
}
