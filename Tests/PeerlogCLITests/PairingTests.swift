import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Pairing by short code between real processes on loopback (docs/PROTOCOL.md §20): a second
/// laptop joins an identity with `device link` / `init --join`, a second person joins a group
/// with `invite create` / `invite join`, and wrong, exhausted, expired and used codes fail
/// without writing anything.
@Suite(.serialized)
struct PairingTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    func string(_ json: JSON, _ key: String) -> String? {
        if case .string(let s)? = json[key] { return s }
        return nil
    }

    /// `device link --json` on a running daemon: the code and the session's address.
    func linkCode(_ home: String, expires: Int = 600, extra: [String] = []) throws -> (code: String, address: String) {
        let ticket = try peerlogJSON(["device", "link", "--home", home, "--expires", "\(expires)"] + extra)
        guard let code = string(ticket, "code"), let address = string(ticket, "address") else {
            throw TestSupport.ProcessError(description: "device link printed no code: \(ticket)")
        }
        return (code, address)
    }

    /// The same nameplate with other secret digits: a wrong code for that session.
    func wrong(_ code: String) -> String {
        let parts = code.split(separator: "-")
        let secret = parts[1] == "0000" ? "1111" : "0000"
        return "\(parts[0])-\(secret)-\(parts[2])"
    }

    @Test func aSecondLaptopBecomesTheSamePersonAndReceivesEveryGroup() throws {
        let a = try makePerson("laptop1", in: dir)
        let created = try peerlogJSON(["group", "create", "--home", a.home, "notes"])
        guard let group = string(created, "id") else { throw TestSupport.ProcessError(description: "\(created)") }
        try expectPeerlog(["put", "--home", a.home, group, "hello", "\"from laptop1\""])
        // A second group, shared with another person: it arrives too.
        let other = try makePerson("friend", in: dir)
        let second = try peerlogJSON(["group", "create", "--home", a.home, "shared"])
        guard let shared = string(second, "id") else { throw TestSupport.ProcessError(description: "\(second)") }
        try expectPeerlog(["group", "add", "--home", a.home, shared, other.identity])
        try expectPeerlog(["put", "--home", a.home, shared, "plan", "\"picnic\""])
        let da = try DaemonProcess(home: a.home)
        let (code, address) = try linkCode(a.home)

        let bHome = dir + "/laptop2"
        let joined = try TestSupport.peerlog([
            "init", "--join", code, "--peer", address, "--home", bHome, "--name", "laptop2",
        ])
        #expect(joined.status == 0, "init --join failed: \(joined.stderr)\n\(da.stderr)")
        let idA = try peerlogJSON(["id", "--home", a.home])
        let idB = try peerlogJSON(["id", "--home", bHome])
        #expect(idA["identity"] == idB["identity"], "the two laptops are not the same person")
        #expect(idA["device"] != idB["device"], "the new laptop must have its own device key")

        // Automatic rejoin: B's daemon dials A (pairings.conf) and receives the group unasked.
        let db = try DaemonProcess(home: bHome)
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["get", "--home", bHome, group, "hello"]).stdout) == "\"from laptop1\"\n"
            }, "laptop2 never received the group\n\(db.stderr)\n\(da.stderr)")
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["get", "--home", bHome, shared, "plan"]).stdout) == "\"picnic\"\n"
            }, "laptop2 never received the second group\n\(db.stderr)")
        try expectPeerlog(["put", "--home", bHome, group, "reply", "\"from laptop2\""])
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["get", "--home", a.home, group, "reply"]).stdout) == "\"from laptop2\"\n"
            }, "laptop1 never received laptop2's write\n\(db.stderr)\n\(da.stderr)")

        // The code was used: a second device cannot take it again, and nothing is written.
        let again = try TestSupport.peerlog(["init", "--join", code, "--peer", address, "--home", dir + "/laptop3"])
        #expect(again.status != 0)
        #expect(again.stderr.contains("already been used; ask for a new one"), "\(again.stderr)")
        #expect(again.stderr.split(separator: "\n").count == 1, "more than one line: \(again.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/laptop3/device.cert"))
        let status = try peerlogJSON(["status", "--home", a.home])
        #expect("\(status)".contains("paired"), "status shows no pairing: \(status)")
    }

    @Test func aSecondPersonJoinsAGroupByCode() throws {
        let alice = try makePerson("alice", in: dir)
        let carol = try makePerson("carol", in: dir)
        let created = try peerlogJSON(["group", "create", "--home", alice.home, "team"])
        guard let group = string(created, "id") else { throw TestSupport.ProcessError(description: "\(created)") }
        let da = try DaemonProcess(home: alice.home)
        let dc = try DaemonProcess(home: carol.home)
        let ticket = try peerlogJSON(["invite", "create", "--home", alice.home, "team", "--role", "admin"])
        guard let code = string(ticket, "code"), let address = string(ticket, "address") else {
            throw TestSupport.ProcessError(description: "invite create printed no code: \(ticket)")
        }
        // No identity typed anywhere, no --allow: the code carries everything.
        let joined = try peerlogJSON(["invite", "join", "--home", carol.home, code, "--peer", address])
        #expect(joined["joined"] == .bool(true), "carol did not join: \(joined)\n\(dc.stderr)\n\(da.stderr)")
        #expect(joined["group"] == .string(group))
        #expect(joined["role"] == .string("admin"))

        // Both print the same safety number.
        let fromCarol = try TestSupport.peerlog(["safety-number", "--home", carol.home, alice.identity]).stdout
        let fromAlice = try TestSupport.peerlog(["safety-number", "--home", alice.home, carol.identity]).stdout
        let numbers = { (text: String) in text.split(separator: "\n").filter { $0.hasPrefix("  ") } }
        #expect(!numbers(fromCarol).isEmpty && numbers(fromCarol) == numbers(fromAlice))
        if case .string(let printed)? = joined["safetyNumber"] {
            #expect(numbers(fromCarol).joined(separator: " ").split(separator: " ") == printed.split(separator: " "))
        }

        // And they sync both ways.
        try expectPeerlog(["put", "--home", carol.home, group, "k", "\"from carol\""])
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["get", "--home", alice.home, group, "k"]).stdout) == "\"from carol\"\n"
            }, "alice never received carol's write\n\(dc.stderr)\n\(da.stderr)")
    }

    @Test func threeWrongCodesKillTheCodeAndWriteNothing() throws {
        let a = try makePerson("host", in: dir)
        let da = try DaemonProcess(home: a.home)
        let (code, address) = try linkCode(a.home)
        let guest = dir + "/guest"
        for attempt in 1...3 {
            let r = try TestSupport.peerlog(["init", "--join", wrong(code), "--peer", address, "--home", guest])
            #expect(r.status != 0, "attempt \(attempt) with a wrong code succeeded")
            #expect(r.stderr.contains("wrong pairing code"), "attempt \(attempt): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "more than one line: \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: guest + "/device.cert"))
        }
        // The right code, too late: the session is gone.
        let late = try TestSupport.peerlog(["init", "--join", code, "--peer", address, "--home", guest])
        #expect(late.status != 0, "the code survived 3 wrong attempts")
        #expect(late.stderr.contains("spent by failed attempts; ask for a new one"), "\(late.stderr)")
        #expect(!FileManager.default.fileExists(atPath: guest + "/device.cert"))
        let status = try peerlogJSON(["status", "--home", a.home])
        let text = "\(status)"
        #expect(
            text.contains("failed") && text.contains("wrong pairing code"), "status shows no failed attempts: \(status)"
        )
        _ = da
    }

    /// A party in the middle relays a real exchange, keeps the guest's messages (the last one is
    /// never delivered, as if the lid closed) and sends them again on a connection of its own: the
    /// host's fresh sid and share make the recorded confirmation fail (`wrongCode`), nothing is
    /// issued, and the right code still pairs on the last attempt.
    @Test func aReplayedTranscriptFailsAndTheCodeStillPairs() throws {
        let a = try makePerson("host", in: dir)
        let da = try DaemonProcess(home: a.home)
        let (code, address) = try linkCode(a.home)
        let cut = dir + "/cut"
        let out = try TestSupport.python(
            "pair_replay.py",
            [address, "--", TestSupport.peerlogBinary, "init", "--join", code, "--peer", "{proxy}", "--home", cut])
        let r = try JSON.parse(out)
        #expect(
            r["relayed"] == .array(["pair_open", "pair_start", "pair_reply", "pair_confirm"].map { .string($0) }),
            "\(out)")
        #expect(r["guest_status"] != .int(0), "the guest finished without pair_done: \(out)")
        #expect(!FileManager.default.fileExists(atPath: cut + "/device.cert"), "the cut-off guest wrote a device")
        #expect(r["replay_open_is_fresh"] == .bool(true), "\(out)")
        #expect(r["replay_reply"] == .string("pair_reply"), "\(out)")
        #expect(r["replay_answer"] == .string("pair_error"), "the replay was not refused: \(out)\n\(da.stderr)")
        #expect(r["replay_code"] == .string("wrongCode"), "\(out)")
        let status = "\(try peerlogJSON(["status", "--home", a.home]))"
        #expect(status.contains("wrong pairing code"), "status does not show the replay's refusal: \(status)")

        // Two attempts spent (the cut exchange, the replay): the right code pairs on the third.
        let bHome = dir + "/laptop2"
        let joined = try TestSupport.peerlog(["init", "--join", code, "--peer", address, "--home", bHome])
        #expect(joined.status == 0, "the code did not survive the replay: \(joined.stderr)\n\(da.stderr)")
        #expect(try peerlogJSON(["id", "--home", bHome])["identity"] == .string(a.identity))
    }

    @Test func aCertificateOnlyDeviceSyncsButCannotLinkOrExport() throws {
        let a = try makePerson("keeper", in: dir)
        let created = try peerlogJSON(["group", "create", "--home", a.home, "shared"])
        guard let group = string(created, "id") else { throw TestSupport.ProcessError(description: "\(created)") }
        try expectPeerlog(["put", "--home", a.home, group, "k", "\"v\""])
        let da = try DaemonProcess(home: a.home)
        let (code, address) = try linkCode(a.home, extra: ["--certificate-only"])
        let bHome = dir + "/borrowed"
        try expectPeerlog(["init", "--join", code, "--peer", address, "--home", bHome, "--name", "borrowed"])
        #expect(!FileManager.default.fileExists(atPath: bHome + "/identity.key"))
        #expect(FileManager.default.fileExists(atPath: a.home + "/identity.key"))
        let idA = try peerlogJSON(["id", "--home", a.home])
        #expect(try peerlogJSON(["id", "--home", bHome])["identity"] == idA["identity"])
        // It holds no identity key: a link session on it is refused, with the reason.
        let db = try DaemonProcess(home: bHome)
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["get", "--home", bHome, group, "k"]).stdout) == "\"v\"\n"
            }, "the certificate-only device never received the group\n\(db.stderr)")
        let link = try TestSupport.peerlog(["device", "link", "--home", bHome])
        #expect(link.status != 0 && link.stderr.contains("no identity key"), "\(link.stderr)")
        let export = try TestSupport.peerlog(
            ["identity", "export", "--home", bHome, "--out", dir + "/b.backup"],
            environment: ["PEERLOG_PASSPHRASE": "correct horse"])
        #expect(export.status != 0 && export.stderr.contains("no identity key"), "\(export.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/b.backup"))
        _ = (da, db)
    }

    @Test func aRestoredBackupRejoinsEveryGroup() throws {
        let a = try makePerson("original", in: dir)
        var groups: [String] = []
        for name in ["one", "two"] {
            let created = try peerlogJSON(["group", "create", "--home", a.home, name])
            guard let id = string(created, "id") else { throw TestSupport.ProcessError(description: "\(created)") }
            try expectPeerlog(["put", "--home", a.home, id, "k", "\"\(name)\""])
            groups.append(id)
        }
        let passphrase = ["PEERLOG_PASSPHRASE": "four random words here"]
        let backup = dir + "/identity.backup"
        let export = try TestSupport.peerlog(
            ["identity", "export", "--home", a.home, "--out", backup], environment: passphrase)
        #expect(export.status == 0, "\(export.stderr)")
        let da = try DaemonProcess(home: a.home)
        let rHome = dir + "/restored"
        let restore = try TestSupport.peerlog(
            ["init", "--restore", backup, "--home", rHome, "--name", "restored"], environment: passphrase)
        #expect(restore.status == 0, "\(restore.stderr)")
        // Admitted as a device of the same identity: it catches up every group unasked.
        let dr = try DaemonProcess(home: rHome, arguments: ["--peer", da.address])
        for (id, name) in zip(groups, ["one", "two"]) {
            #expect(
                TestSupport.waitUntil(timeout: 30) {
                    (try? TestSupport.peerlog(["get", "--home", rHome, id, "k"]).stdout) == "\"\(name)\"\n"
                }, "the restored device never received group \(name)\n\(dr.stderr)\n\(da.stderr)")
        }
    }

    @Test func anExpiredCodeIsRefused() throws {
        let a = try makePerson("host", in: dir)
        let da = try DaemonProcess(home: a.home)
        let (code, address) = try linkCode(a.home, expires: 1)
        Thread.sleep(forTimeInterval: 2)
        let r = try TestSupport.peerlog(["init", "--join", code, "--peer", address, "--home", dir + "/late"])
        #expect(r.status != 0, "an expired code was accepted")
        #expect(r.stderr.contains("expired; ask for a new one"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/late/device.cert"))
        _ = da
    }

    @Test func linkNeedsARunningDaemonAndAValidCode() throws {
        let a = try makePerson("host", in: dir)
        let r = try TestSupport.peerlog(["device", "link", "--home", a.home])
        #expect(r.status != 0 && r.stderr.contains("peerlog daemon"), "\(r.stderr)")
        let bad = try TestSupport.peerlog(["init", "--join", "12-34", "--peer", "127.0.0.1:1", "--home", dir + "/x"])
        #expect(bad.status != 0 && !bad.stderr.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir + "/x"))
    }

    /// One port: the code's address is the daemon's own, which serves Noise peers and guests
    /// alike. Connections that send no share (a port scan, a burst that closes at once, a
    /// preamble and nothing more, garbage) cost the code nothing, and a mistyped nameplate is
    /// told plainly.
    @Test func theDaemonsOwnPortServesPairingAndProbesCostNothing() throws {
        let a = try makePerson("host", in: dir)
        let friend = try makePerson("friend", in: dir)
        let created = try peerlogJSON(["group", "create", "--home", a.home, "notes"])
        guard let group = string(created, "id") else { throw TestSupport.ProcessError(description: "\(created)") }
        try expectPeerlog(["group", "add", "--home", a.home, group, friend.identity])
        let da = try DaemonProcess(home: a.home)
        let (code, address) = try linkCode(a.home)
        #expect(address == da.address, "the ticket names \(address), the daemon listens on \(da.address)")

        let out = try TestSupport.python("pair_probe.py", [da.address, code.split(separator: "-")[0].description])
        let probes = try JSON.parse(out)
        #expect(probes["opened"] == .int(40), "\(out)")
        let status = try peerlogJSON(["status", "--home", a.home])
        guard case .array(let open)? = status["pairing"]?["open"], open.count == 1 else {
            Issue.record("no open session: \(status)")
            return
        }
        #expect(open[0]["attemptsLeft"] == .int(3), "probes spent attempts: \(status)\n\(da.stderr)")

        // A nameplate with no session: a plain answer, nothing spent.
        let parts = code.split(separator: "-")
        let otherNameplate = parts[0] == "999" ? "998" : "999"
        let stray = try TestSupport.peerlog([
            "init", "--join", "\(otherNameplate)-\(parts[1])-\(parts[2])", "--peer", da.address, "--home",
            dir + "/stray",
        ])
        #expect(
            stray.status != 0 && stray.stderr.contains("no pairing session \(otherNameplate) is open"),
            "\(stray.stderr)")

        // A Noise peer on the same port still syncs, while the code waits.
        let df = try DaemonProcess(home: friend.home, arguments: ["--peer", da.address, "--allow", a.identity])
        try expectPeerlog(["put", "--home", a.home, group, "k", "\"v\""])
        #expect(
            TestSupport.waitUntil(timeout: 30) {
                (try? TestSupport.peerlog(["group", "accept", "--home", friend.home, group]).status) == 0
            }, "the invitation never reached the friend over the shared port\n\(df.stderr)\n\(da.stderr)")

        let bHome = dir + "/laptop2"
        let joined = try TestSupport.peerlog(["init", "--join", code, "--peer", da.address, "--home", bHome])
        #expect(joined.status == 0, "joining through the daemon's port failed: \(joined.stderr)\n\(da.stderr)")
        #expect(try peerlogJSON(["id", "--home", bHome])["identity"] == .string(a.identity))
    }
}
