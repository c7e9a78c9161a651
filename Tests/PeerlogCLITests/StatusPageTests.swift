import Foundation
import PeerlogEncoding
import PeerlogNode
import PeerlogStatusServer
import PeerlogTestSupport
import Testing

/// `peerlog daemon --http` and `relay run --http` as their users see them: real daemons on
/// loopback, the page in Debian's headless chromium (Selenium), `/metrics` through the
/// `prometheus-client` package's parser, and raw sockets for bad clients
/// (tools/status_page_check.py does the looking; these tests drive the daemons).
@Suite(.serialized)
struct StatusPageTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    /// Runs a check of tools/status_page_check.py; its one JSON line, or a failure with its reason.
    func check(_ arguments: [String], timeout: TimeInterval = 120) throws -> JSON {
        let r = try TestSupport.run(
            TestSupport.python, [TestSupport.repoRoot + "/tools/status_page_check.py"] + arguments, timeout: timeout)
        guard r.status == 0 else {
            throw TestSupport.ProcessError(
                description: "status_page_check \(arguments[0]) exited \(r.status): \(r.stderr)")
        }
        return try JSON.parse(r.stdout)
    }

    /// The page's URL, from the line the daemon prints once its HTTP listener is bound.
    func pageURL(_ daemon: DaemonProcess) throws -> String {
        var url: String?
        _ = TestSupport.waitUntil(timeout: 20) {
            let out = daemon.stdout
            guard let range = out.range(of: "status page on ") else { return false }
            url = String(out[range.upperBound...].prefix { !$0.isWhitespace })
            return true
        }
        guard let url else { throw TestSupport.ProcessError(description: "no status page line: \(daemon.stderr)") }
        return url
    }

    func device(_ home: String) throws -> String {
        guard case .string(let d)? = try peerlogJSON(["id", "--home", home])["device"] else {
            throw TestSupport.ProcessError(description: "no device for \(home)")
        }
        return d
    }

    /// Ann owns a group Ben and Cat accept; three daemons dial each other, each serving its page.
    func threeNodes() throws -> (group: String, daemons: [DaemonProcess], homes: [String]) {
        let a = try makePerson("ann", in: dir)
        let b = try makePerson("ben", in: dir)
        let c = try makePerson("cat", in: dir)
        let group = try makeSharedGroup(owner: a, others: [b, c])
        let ports = try (0..<3).map { _ in try TestSupport.freePort() }
        let http = ["--http", "127.0.0.1:0"]
        let da = try DaemonProcess(home: a.home, listenPort: ports[0], arguments: http)
        let db = try DaemonProcess(
            home: b.home, listenPort: ports[1],
            arguments: http + [
                "--peer", "127.0.0.1:\(ports[0])", "--peer", "127.0.0.1:\(ports[2])", "--allow", a.identity,
            ])
        let dc = try DaemonProcess(
            home: c.home, listenPort: ports[2],
            arguments: http + [
                "--peer", "127.0.0.1:\(ports[0])", "--peer", "127.0.0.1:\(ports[1])", "--allow", a.identity,
            ])
        for p in [b, c] {
            #expect(
                TestSupport.waitUntil(timeout: 30) {
                    (try? TestSupport.peerlog(["group", "show", "--home", p.home, group]).status) == 0
                }, "the group never reached \(p.home)")
            try expectPeerlog(["group", "accept", "--home", p.home, group])
        }
        return (group, [da, db, dc], [a.home, b.home, c.home])
    }

    @Test func thePageShowsPeersAndGroupAndFollowsAWriteOnAnotherNodeLive() throws {
        let (group, daemons, homes) = try threeNodes()
        defer { for d in daemons { d.stop() } }
        let urls = try daemons.map(pageURL)
        let shot = dir + "/status-page.png"
        let photo = dir + "/photo.bin"
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: URL(fileURLWithPath: photo))
        let page = try check(
            [
                "page", urls[0], "--group", group, "--peer", try device(homes[1]), "--peer", try device(homes[2]),
                "--write", "\(TestSupport.peerlogBinary) put --home \(homes[1]) \(group) seen-live yes",
                "--then", "\(TestSupport.peerlogBinary) put --home \(homes[2]) \(group) more yes", "--then-times", "6",
                "--blob-write",
                "\(TestSupport.peerlogBinary) put --home \(homes[1]) \(group) photo --value-file \(photo)",
                "--screenshot", shot, "--converged", urls[1], urls[2],
            ], timeout: 240)
        if case .array(let held)? = page["blobHeld"], held.count == 2, let before = number(held[0]),
            let after = number(held[1])
        {
            #expect(after >= before + 300_000, "the page shows the fetched blob held: \(before) → \(after)")
        } else {
            Issue.record("no blob figures in the page report \(page)")
        }
        guard let before = number(page["before"]), let after = number(page["after"]),
            let converged = number(page["converged"])
        else { throw TestSupport.ProcessError(description: "unexpected page report \(page)") }
        #expect(after > before, "the committed mark on the page went \(before) → \(after)")
        #expect(converged >= after)
        // The screenshot is a real PNG the browser drew (the README shows one made by this test).
        let png = try Data(contentsOf: URL(fileURLWithPath: shot))
        #expect(png.count > 10_000 && png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "screenshot of \(png.count) bytes")
        if let keep = ProcessInfo.processInfo.environment["PEERLOG_STATUS_SCREENSHOT"] {
            try? FileManager.default.removeItem(atPath: keep)
            try FileManager.default.copyItem(atPath: shot, toPath: keep)
        }

        // /api/status is `peerlog status --json`: same schema, same node, same committed mark.
        let api = try check(["fetch", urls[0] + "api/status"])
        let cli = try peerlogJSON(["status", "--home", homes[0]])
        #expect(keys(api) == keys(cli) && api["device"] == cli["device"] && api["identity"] == cli["identity"])
        // The blob's write came after the convergence: one more commit.
        #expect(committed(api, group) == committed(cli, group) && committed(api, group) == converged + 1)

        // /metrics parses with Prometheus' own parser and counts what happened.
        let metrics = try check(["metrics", urls[0]])
        for family in [
            "peerlog_receipts_ingested", "peerlog_items_rejected", "peerlog_commits", "peerlog_group_tentative",
            "peerlog_group_lag", "peerlog_group_committed_seq", "peerlog_connections", "peerlog_connections_opened",
            "peerlog_handshake_failures", "peerlog_bytes_received", "peerlog_bytes_sent", "peerlog_sync_round_trips",
        ] {
            #expect(metrics[family] != nil, "\(family) missing from /metrics")
        }
        #expect(sample(metrics, "peerlog_receipts_ingested", "peerlog_receipts_ingested_total{}") >= 1)
        #expect(sample(metrics, "peerlog_bytes_received", "peerlog_bytes_received_total{}") > 1000)
        #expect(sample(metrics, "peerlog_sync_round_trips", "peerlog_sync_round_trips_total{}") >= 1)
        #expect(
            sample(metrics, "peerlog_group_committed_seq", #"peerlog_group_committed_seq{"group": "\#(group)"}"#)
                == converged + 1)
        let live =
            sample(metrics, "peerlog_connections", #"peerlog_connections{"direction": "inbound"}"#)
            + sample(metrics, "peerlog_connections", #"peerlog_connections{"direction": "outbound"}"#)
        #expect(live == 2, "Ann is connected to Ben and Cat")
        for d in daemons { #expect(d.stop() == 0) }
    }

    @Test func aTokenGuardsEveryPathAndUnknownPathsAre404() throws {
        let a = try makePerson("ann", in: dir)
        let token = "0123456789abcdef-token"
        let daemon = try DaemonProcess(home: a.home, arguments: ["--http", "0.0.0.0:0", "--http-token", token])
        defer { daemon.stop() }
        // Reached over loopback only: a wildcard listener is non-loopback, the traffic is not.
        let port = try pageURL(daemon).split(separator: ":").last!.prefix { $0.isNumber }
        let codes = try check(["auth", "http://127.0.0.1:\(port)/", "--token", token])
        for path in ["/", "/api/status", "/metrics", "/events", "/nope"] {
            #expect(number(codes["none \(path)"]) == 401, "no token, \(path)")
            #expect(number(codes["wrong \(path)"]) == 401, "wrong token, \(path)")
        }
        for path in ["/", "/api/status", "/metrics"] {
            #expect(number(codes["header \(path)"]) == 200 && number(codes["query \(path)"]) == 200, "\(path)")
        }
        #expect(number(codes["header /nope"]) == 404 && number(codes["query /nope"]) == 404)

        // A non-loopback address without a token, or a short token, is a usage error (64) of one line.
        for args in [["--http", "0.0.0.0:0"], ["--http", "127.0.0.1:0", "--http-token", "fifteen-chars!!"]] {
            let r = try TestSupport.peerlog(["daemon", "--home", a.home, "--no-discovery"] + args)
            #expect(r.status == 64 && r.stderr.contains("--http"), "\(args): \(r.status) \(r.stderr)")
        }
        // A port in use: one line naming it, exit 1, and the node does not stay up.
        let taken = try pageURL(daemon).replacingOccurrences(of: "http://0.0.0.0", with: "127.0.0.1")
            .trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let b = try makePerson("ben", in: dir)
        let r = try TestSupport.run(
            TestSupport.peerlogBinary,
            ["daemon", "--home", b.home, "--listen", "127.0.0.1:0", "--no-discovery", "--http", taken], timeout: 30)
        #expect(r.status == 1 && r.stderr.contains("cannot serve --http on \(taken)"), "\(r.status): \(r.stderr)")
    }

    @Test func slowAndAbusiveClientsDoNotStopThePage() throws {
        let a = try makePerson("ann", in: dir)
        let daemon = try DaemonProcess(home: a.home, arguments: ["--http", "127.0.0.1:0"])
        defer { daemon.stop() }
        let url = try pageURL(daemon)
        let report = try check(["abuse", url], timeout: 90)
        // Event streams up to the limit, then 503; the rest of the server keeps answering.
        #expect(number(report["events"]?["200"]) == 16, "\(report)")
        #expect(number(report["events"]?["503"]) == 4, "\(report)")
        #expect(report["garbage"] == .string("400") && number(report["during"]?["status"]) == 200, "\(report)")
        #expect([.string("400"), .string("431"), .string("closed")].contains(report["oversized"]), "\(report)")
        // Answered while the abuse goes on, well before the idle timeout cuts anything (10 s);
        // the bound leaves a busy machine room.
        #expect((number(report["during"]?["seconds"]) ?? 99) < 8, "\(report)")
        // Heads trickled and never finished are cut at the idle timeout (10 s).
        #expect(number(report["stalled_closed"]) == 40, "\(report)")
        #expect((number(report["stalled_closed_within"]) ?? 99) <= 15, "\(report)")
        #expect(number(report["after"]) == 200 && report["events_after"] == .string("200"), "\(report)")

        // A page that stops reading cannot hold the daemon up: SIGTERM still exits 0, promptly.
        let holder = try ChildProcess(
            TestSupport.python,
            [
                "-c",
                "import socket,sys,time; s=socket.create_connection(('127.0.0.1',\(url.split(separator: ":").last!.prefix { $0.isNumber }))); "
                    + "s.sendall(b'GET /events HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'); time.sleep(60)",
            ], lifetime: 120)
        defer { holder.kill9() }
        usleep(1_500_000)
        let started = Date()
        #expect(daemon.stop(grace: 15) == 0)
        #expect(Date().timeIntervalSince(started) < 12)
        #expect(daemon.stdout.contains("status page on") && daemon.isRunning == false)
    }

    /// 300 pages open `/events` at once: 16 streams, the rest refused with 503 and their
    /// connections closed, so none waits for the server's 64 slots and `/api/status` answers.
    /// (Kept open, the refused connections took every slot until their idle timeout: issue 33.)
    @Test func manyPagesAtOnceAreAnsweredAndStatusStillAnswers() throws {
        let a = try makePerson("ann", in: dir)
        let daemon = try DaemonProcess(home: a.home, arguments: ["--http", "127.0.0.1:0"])
        defer { daemon.stop() }
        let url = try pageURL(daemon)
        let port = String(url.split(separator: ":").last!.prefix { $0.isNumber })
        let out = try TestSupport.spawnAndWait(
            [TestSupport.python, TestSupport.repoRoot + "/tools/status_events_flood.py", "127.0.0.1", port, "300"],
            timeout: 180)
        #expect(out.status == 0, "\(out.stderr)")
        let report = try JSON.parse(out.stdout)
        #expect(number(report["answers"]?["200"]) == 16, "\(report)")
        #expect(number(report["answers"]?["503"]) == 284, "\(report)")
        #expect(report["answers"]?["none"] == nil, "connections left unanswered: \(report)")
        #expect(report["api_status"] == .array([.int(200), .int(200), .int(200)]), "\(report)")
    }

    @Test func aRelayServesStatusAndMetrics() throws {
        let home = dir + "/relay"
        _ = try TestSupport.peerlogOK(["relay", "init", "--home", home])
        let relay = try DaemonProcess(home: home, arguments: ["--http", "127.0.0.1:0"], command: ["relay", "run"])
        defer { relay.stop() }
        let url = try pageURL(relay)
        let status = try check(["fetch", url + "api/status"])
        #expect(status["device"] == .string(relay.device))
        let metrics = try check(["metrics", url])
        #expect(metrics["peerlog_handshake_failures"] != nil && metrics["peerlog_bytes_sent"] != nil)
        #expect(relay.stop() == 0)
    }

    @Test func accessRulesAtTheirBoundaries() throws {
        let loopback = PeerAddress(host: "127.0.0.1", port: 1)
        #expect(throws: HTTPAccessError.tokenRequired("0.0.0.0")) {
            try HTTPAccess(address: PeerAddress(host: "0.0.0.0", port: 1), token: nil)
        }
        for host in ["127.0.0.1", "127.1.2.3", "::1", "localhost"] {
            #expect(throws: Never.self) { try HTTPAccess(address: PeerAddress(host: host, port: 1), token: nil) }
        }
        for host in ["128.0.0.1", "::", "192.168.1.2", "127.0.0", "example.com"] {
            #expect(!HTTPAccess.isLoopback(host), "\(host)")
        }
        let shortest = String(repeating: "a", count: HTTPAccess.minTokenLength)
        let longest = String(repeating: "a", count: HTTPAccess.maxTokenLength)
        #expect(throws: HTTPAccessError.badToken) {
            try HTTPAccess(address: loopback, token: String(shortest.dropLast()))
        }
        #expect(throws: HTTPAccessError.badToken) { try HTTPAccess(address: loopback, token: longest + "a") }
        #expect(throws: HTTPAccessError.badToken) { try HTTPAccess(address: loopback, token: shortest + " b") }
        #expect(throws: HTTPAccessError.badToken) { try HTTPAccess(address: loopback, token: shortest + "&b") }
        let access = try HTTPAccess(address: PeerAddress(host: "0.0.0.0", port: 1), token: shortest)
        _ = try HTTPAccess(address: loopback, token: longest)
        #expect(access.allows(authorization: "Bearer " + shortest, query: nil))
        #expect(access.allows(authorization: nil, query: "x=1&token=" + shortest))
        #expect(!access.allows(authorization: nil, query: nil))
        #expect(!access.allows(authorization: "Bearer " + shortest + "a", query: "token=" + shortest.dropLast()))
        #expect(!access.allows(authorization: "Basic " + shortest, query: nil))
        #expect(try HTTPAccess(address: loopback, token: nil).allows(authorization: nil, query: nil))
        // As the page sends it (encodeURIComponent), and as typed.
        let symbols = try HTTPAccess(address: loopback, token: "a=b/c+d:e@f$g,h;i?j%k")
        #expect(symbols.allows(authorization: nil, query: "token=a%3Db%2Fc%2Bd%3Ae%40f%24g%2Ch%3Bi%3Fj%25k"))
        #expect(symbols.allows(authorization: "Bearer a=b/c+d:e@f$g,h;i?j%k", query: nil))
        #expect(!symbols.allows(authorization: nil, query: "token=a%3Db%2Fc%2Bd%3Ae%40f%24g%2Ch%3Bi%3Fj"))
    }

    private func keys(_ json: JSON) -> Set<String> {
        guard case .object(let members) = json else { return [] }
        return Set(members.map(\.0))
    }

    private func number(_ json: JSON?) -> Double? {
        if case .number(let text)? = json { return Double(text) }
        return nil
    }

    private func committed(_ status: JSON, _ group: String) -> Double? {
        guard case .array(let groups)? = status["groups"] else { return nil }
        return groups.first { $0["id"] == .string(group) }.flatMap { number($0["committed"]) }
    }

    private func sample(_ metrics: JSON, _ family: String, _ key: String) -> Double {
        number(metrics[family]?[key]) ?? -1
    }
}
