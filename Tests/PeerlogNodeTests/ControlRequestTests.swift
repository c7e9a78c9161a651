import PeerlogModel
import PeerlogQuickCalls
import Testing

@testable import PeerlogNode

/// The control socket's one grammar: what `ControlClient` writes is what the daemon reads.
struct ControlRequestTests {
    @Test(arguments: [
        ControlRequest.ping, .status, .captureStop,
        .captureStart(path: "/tmp/a.pcapng", maxBytes: nil, omitBodies: false),
        .captureStart(path: "/tmp/with two  spaces.pcapng", maxBytes: 1_048_576, omitBodies: true),
        .put(ControlPut(group: "notes", key: "k", value: "v")),
        .put(ControlPut(group: "b7x", key: "with two  spaces", value: "two\nlines, ünïcødé 🙂 and \"quotes\"")),
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

    /// A put's fields travel as the hex of their UTF-8 bytes: one line, whatever they hold.
    @Test func aPutIsOneLineOfHexFields() {
        #expect(ControlRequest.put(ControlPut(group: "g", key: "k 1", value: "v\n")).line == "put 67 6b2031 760a")
        #expect(!ControlRequest.put(ControlPut(group: "g", key: "k", value: "a\nb\r\nc")).line.contains("\n"))
    }

    /// The put's reply: what the daemon writes (with the server's newline) is what the launcher
    /// reads; anything else is no stored write.
    @Test func aStoredReplyRoundTripsAndNothingElseReadsAsOne() {
        for seq: UInt64? in [nil, 0, 42, .max] {
            let stored = ControlPut.Stored(group: "bgroup", cid: "bafyrei", type: "entity.put", seq: seq)
            #expect(ControlPut.Stored(reply: stored.reply + [UInt8(ascii: "\n")]) == stored)
        }
        for reply in [#"{"error":"no group"}"#, "", "garbled", #"{"group":"g","cid":"c","type":"t","seq":x}"#] {
            #expect(ControlPut.Stored(reply: Array(reply.utf8)) == nil, "\(reply)")
        }
    }

    @Test(arguments: [
        "put 67 6b", "put 67 6b 76 76", "put 6 6b 76", "put 67 6b 7g", "put 67 6B 76", "put 67 6b ff",
        "put 67 c3 76", "put 67  6b 76", "put 67 6b 76 ",
    ])
    func aMalformedPutIsRefused(_ line: String) {
        guard case .failure(let invalid) = ControlRequest.parse(line) else {
            Issue.record("\(line) parsed")
            return
        }
        #expect(invalid.description == ControlPut.usage)
    }

    @Test func refusalsSayWhatTheDaemonReplies() {
        func problem(_ line: String) -> String? {
            if case .failure(let invalid) = ControlRequest.parse(line) { return invalid.description }
            return nil
        }
        #expect(
            problem("stats")
                == "unknown request \"stats\" (known: status, ping, wrote, capture start, capture stop, pair open, pair adopt, put)"
        )
        #expect(problem("capture pause") == "unknown capture request (known: capture start, capture stop)")
        let usage = "usage: capture start omit-bodies=0|1 max-bytes=N /absolute/path"
        #expect(problem("capture start omit-bodies=0 max-bytes=0 relative.pcapng") == usage)
        #expect(problem("capture start omit-bodies=0 max-bytes=lots /a") == usage)
        #expect(problem("capture start max-bytes=0 omit-bodies=0 /a") == usage)
        #expect(problem("capture start omit-bodies=0 max-bytes=0") == usage)
    }

    @Test func pairingRequestsRoundTripAndRefuseBadWords() throws {
        let group = try GroupID(bytes: Array(1...16))
        let identity = try IdentityID(bytes: Array(repeating: 7, count: 32))
        let requests: [ControlRequest] = [
            .pairOpen(PairingOpenRequest(kind: .link(sharesIdentityKey: true), lifetimeSeconds: 600)),
            .pairOpen(PairingOpenRequest(kind: .link(sharesIdentityKey: false), lifetimeSeconds: 1)),
            .pairOpen(PairingOpenRequest(kind: .invite(group: group, role: .admin), lifetimeSeconds: 86_400)),
            .pairAdopt(
                PairingAdoption(identity: identity, address: PeerAddress(host: "10.0.0.5", port: 7300), accept: group)),
            .pairAdopt(PairingAdoption(identity: identity, address: PeerAddress(host: "::1", port: 7300), accept: nil)),
        ]
        for request in requests {
            #expect(try ControlRequest.parse(request.line).get() == request, "\(request.line)")
        }
        func problem(_ line: String) -> String? {
            if case .failure(let invalid) = ControlRequest.parse(line) { return invalid.description }
            return nil
        }
        // The lifetime's bounds, 1...86400 seconds.
        #expect(problem("pair open link expires=0 identity-key=1")?.hasPrefix("usage: pair open") == true)
        #expect(problem("pair open link expires=86401 identity-key=1")?.hasPrefix("usage: pair open") == true)
        #expect(problem("pair open link expires=600 identity-key=2") != nil)
        #expect(problem("pair open invite expires=600 role=boss \(group)")?.hasPrefix("unknown role boss") == true)
        #expect(problem("pair open invite expires=600 role=member nogroup") == "not a group id: nogroup")
        #expect(problem("pair adopt \(identity)") == "usage: pair adopt IDENTITY HOST:PORT [GROUP]")
    }
}
