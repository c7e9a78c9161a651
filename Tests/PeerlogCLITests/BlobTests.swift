import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Blobs between real daemons (docs/PROTOCOL.md §24): a value too large for a receipt is put
/// from a file, its receipt syncs at once, and the other member's daemon fetches and checks the
/// bytes: at once up to the prefetch size, on demand above it.
@Suite(.serialized)
struct BlobTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    /// `count` pseudo-random bytes with `canary` written at a few places, in a new file.
    func file(_ name: String, count: Int, canary: String) throws -> String {
        var g = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { b in
            for i in stride(from: 0, to: count - 7, by: 8) {
                b.storeBytes(of: g.next() as UInt64, toByteOffset: i, as: UInt64.self)
            }
        }
        let mark = Array(canary.utf8)
        for at in [0, count / 2, count - mark.count] { bytes.replaceSubrange(at..<(at + mark.count), with: mark) }
        let path = dir + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func blobs(_ home: String) throws -> [JSON] {
        guard case .array(let list) = try peerlogJSON(["blob", "list", "--home", home]) else { return [] }
        return list
    }

    /// The files under `home` (its store and blob files) that contain `needle`.
    func filesHolding(_ needle: String, under home: String) -> [String] {
        let target = Data(needle.utf8)
        let walker = FileManager.default.enumerator(atPath: home)
        var found: [String] = []
        while let name = walker?.nextObject() as? String {
            let path = home + "/" + name
            if let data = FileManager.default.contents(atPath: path), data.range(of: target) != nil {
                found.append(name)
            }
        }
        return found
    }

    @Test(arguments: [false, true])
    func aLargeValueSyncsBetweenTwoDaemons(plaintext: Bool) throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let b = try makePerson("bob", in: dir)
        let group = try createGroup(a.home, "album", plaintext: plaintext)
        try expectPeerlog(["group", "add", "--home", a.home, group, b.identity])
        let da = try DaemonProcess(home: a.home)
        let db = try DaemonProcess(home: b.home, arguments: ["--peer", da.address, "--allow", a.identity])
        defer {
            da.stop()
            db.stop()
        }
        #expect(acceptWhenInvited(b.home, group), "bob never got the invitation: \(db.stderr)")

        // 5 MB: fetched as soon as the receipt arrives.
        let canary = "CANARY-\(UInt64.random(in: 0...UInt64.max))"
        let photo = try file("photo.jpg", count: 5_000_000, canary: canary)
        let put = try expectPeerlog(["put", "--home", a.home, group, "photo", "--value-file", photo])
        #expect(put.contains("blob"), "\(put)")
        #expect(
            TestSupport.waitUntil(timeout: 60) { (try? blobs(b.home))?.first?["whole"] == .bool(true) },
            "bob's daemon did not fetch the photo: \((try? blobs(b.home)) ?? [])\n\(db.stderr.suffix(2_000))")
        let out = dir + "/photo.out"
        try expectPeerlog(["get", "--home", b.home, group, "photo", "--out", out])
        #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: photo))

        // Over the prefetch size: not fetched until read.
        let video = try file("video.mp4", count: 70_000_000, canary: canary)
        try expectPeerlog(["put", "--home", a.home, group, "video", "--value-file", video])
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? TestSupport.peerlog(["get", "--home", b.home, group, "video"]).stdout.contains("peerlog.blob"))
                    == true
            }, "the video's receipt did not reach bob")
        let held = try blobs(b.home)
        #expect(held.count == 1, "bob fetched the video before anyone asked: \(held)")
        let videoOut = dir + "/video.out"
        try expectPeerlog(["get", "--home", b.home, group, "video", "--out", videoOut, "--wait", "120"])
        #expect(FileManager.default.contents(atPath: videoOut) == FileManager.default.contents(atPath: video))
        // Both are values now: gc keeps them. Once the photo's key is deleted, gc takes it.
        #expect(try expectPeerlog(["blob", "gc", "--home", b.home]).hasPrefix("collected 0 blob(s)"))
        try expectPeerlog(["delete", "--home", a.home, group, "photo"])
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? TestSupport.peerlog(["blob", "gc", "--home", b.home]).stdout.hasPrefix("collected 1 blob(s)"))
                    == true
            }, "the photo's blob was not collected after its key was deleted")
        #expect(try blobs(b.home).count == 1)

        // In an encrypted group no file of either home holds the bytes in the clear.
        if !plaintext {
            #expect(filesHolding(canary, under: a.home).isEmpty, "\(filesHolding(canary, under: a.home))")
            #expect(filesHolding(canary, under: b.home).isEmpty, "\(filesHolding(canary, under: b.home))")
        } else {
            #expect(!filesHolding(canary, under: b.home).isEmpty, "the canary check cannot fail")
        }
    }

    /// Bob's daemon is killed (SIGKILL) in the middle of fetching a 100 MB blob: the chunks it had
    /// written stay, the part file is never the value, and after a restart it fetches the rest and
    /// reads back equal bytes.
    /// Two peers hold the blob: Carol's daemon asks both for chunks at once, and each serves part
    /// of it (its status counts the bytes it served).
    @Test func twoPeersServeOneBlobAtOnce() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let b = try makePerson("bob", in: dir)
        let c = try makePerson("carol", in: dir)
        let group = try createGroup(a.home, "album", plaintext: false)
        for m in [b, c] { try expectPeerlog(["group", "add", "--home", a.home, group, m.identity]) }
        let da = try DaemonProcess(home: a.home)
        let db = try DaemonProcess(home: b.home, arguments: ["--peer", da.address, "--allow", a.identity])
        defer {
            da.stop()
            db.stop()
        }
        #expect(acceptWhenInvited(b.home, group), "bob never got the invitation: \(db.stderr)")
        // Over the prefetch size, so each daemon fetches it only when asked.
        let photo = try file("photo.jpg", count: 70_000_000, canary: "CANARY-TWO-PEERS")
        try expectPeerlog(["put", "--home", a.home, group, "photo", "--value-file", photo])
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? TestSupport.peerlog(["get", "--home", b.home, group, "photo"]).status) == 0
            })
        try expectPeerlog(["blob", "fetch", "--home", b.home, group, "photo", "--wait", "120"])
        func served(_ home: String) -> Double? {
            guard case .number(let n)? = try? peerlogJSON(["status", "--home", home])["blobs"]?["servedBytes"] else {
                return nil
            }
            return Double(n)
        }
        let before = (alice: served(a.home) ?? 0, bob: served(b.home) ?? 0)
        let dc = try DaemonProcess(
            home: c.home, arguments: ["--peer", da.address, "--peer", db.address, "--allow", a.identity])
        defer { dc.stop() }
        #expect(acceptWhenInvited(c.home, group), "carol never got the invitation: \(dc.stderr)")
        // Both sessions of Carol's daemon sync the group before she asks.
        func syncingPeers() -> Int {
            guard case .array(let groups)? = try? peerlogJSON(["status", "--home", c.home])["groups"] else { return 0 }
            for g in groups where g["id"] == .string(group) {
                if case .array(let peers)? = g["peers"] { return peers.count }
            }
            return 0
        }
        #expect(TestSupport.waitUntil(timeout: 60) { syncingPeers() == 2 }, "carol syncs with \(syncingPeers()) peers")
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? TestSupport.peerlog(["get", "--home", c.home, group, "photo"]).status) == 0
            })
        try expectPeerlog(["blob", "fetch", "--home", c.home, group, "photo", "--wait", "120"])
        let out = dir + "/photo.out"
        try expectPeerlog(["get", "--home", c.home, group, "photo", "--out", out])
        #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: photo))
        let after = (alice: served(a.home) ?? 0, bob: served(b.home) ?? 0)
        #expect(after.alice > before.alice && after.bob > before.bob, "served: \(before) → \(after)")
        #expect(after.alice - before.alice + after.bob - before.bob >= 70_000_000)
    }

    @Test func aFetchKilledMidwayResumesAfterARestart() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let b = try makePerson("bob", in: dir)
        let group = try createGroup(a.home, "films")
        try expectPeerlog(["group", "add", "--home", a.home, group, b.identity])
        let da = try DaemonProcess(home: a.home)
        defer { da.stop() }
        var db = try DaemonProcess(home: b.home, arguments: ["--peer", da.address, "--allow", a.identity])
        defer { db.stop() }
        #expect(acceptWhenInvited(b.home, group), "bob never got the invitation: \(db.stderr)")
        let film = try file("film.mkv", count: 100_000_000, canary: "film")
        try expectPeerlog(["put", "--home", a.home, group, "film", "--value-file", film])
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                peerlogValue(b.home, group, "film")?.contains("peerlog.blob") == true
            },
            "the film's receipt did not reach bob")
        try expectPeerlog(["blob", "fetch", "--home", b.home, group, "film", "--wait", "0"])
        var heldAtKill: Int64 = 0
        #expect(
            TestSupport.waitUntil(timeout: 120) {
                guard case .number(let held)? = (try? blobs(b.home))?.first?["held"], let n = Int64(held) else {
                    return false
                }
                heldAtKill = n
                return n > 0
            }, "bob's daemon never started the fetch: \(db.stderr.suffix(2_000))")
        db.kill9()
        let afterKill = try blobs(b.home).first
        guard case .number(let heldText)? = afterKill?["held"], let held = Int64(heldText) else {
            Issue.record("no blob listed after the kill: \(String(describing: afterKill))")
            return
        }
        #expect(held >= heldAtKill, "chunks written before the kill were lost")
        if afterKill?["whole"] == .bool(false) {
            let read = try TestSupport.peerlog([
                "get", "--home", b.home, group, "film", "--out", dir + "/no", "--wait", "0",
            ])
            #expect(
                read.status != 0 && read.stderr.contains("not held whole"),
                "a part file was read as the value: \(read.stderr)")
        }
        db = try DaemonProcess(home: b.home, arguments: ["--peer", da.address, "--http", "127.0.0.1:0"])
        let out = dir + "/film.out"
        try expectPeerlog(["get", "--home", b.home, group, "film", "--out", out, "--wait", "120"])
        #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: film))
        // The restarted daemon's status counts what it fetched.
        let status = try peerlogJSON(["status", "--home", b.home])
        guard case .number(let received)? = status["blobs"]?["receivedBytes"], let n = Int64(received) else {
            Issue.record("status shows no blobs: \(status)")
            return
        }
        #expect(n > 0 && n <= 100_000_000, "\(n)")
        // So does /metrics.
        var page: String?
        _ = TestSupport.waitUntil(timeout: 20) {
            guard let range = db.stdout.range(of: "status page on ") else { return false }
            page = String(db.stdout[range.upperBound...].prefix { !$0.isWhitespace })
            return true
        }
        let metrics = try TestSupport.run("/usr/bin/curl", ["-s", "--max-time", "10", (page ?? "") + "metrics"]).stdout
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("peerlog_blob_bytes_received ") }
        #expect(line.flatMap { Double($0.split(separator: " ").last ?? "") } == Double(n), "\(metrics.prefix(3_000))")
    }

    /// A relay keeps members' blobs only up to its quota: past it, a member's `blob_have` is
    /// logged and not taken, and the relay holds nothing of the blob.
    @Test func aRelayTakesNoBlobPastItsQuota() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let relayHome = dir + "/relay"
        try expectPeerlog(["relay", "init", "--home", relayHome, "--name", "small-relay"])
        let relayKey = try expectPeerlog(["relay", "key", "--home", relayHome])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let port = try TestSupport.freePort()
        let a = try makePerson("alice", in: dir)
        let relay = try DaemonProcess(
            home: relayHome, listenPort: port, arguments: ["--allow", a.identity, "--blob-quota", "1"],
            command: ["relay", "run"])
        defer { relay.stop() }
        let group = try createGroup(a.home, "album")
        try expectPeerlog(["group", "sequencer", "--home", a.home, group, "relay", "127.0.0.1:\(port)", relayKey])
        let da = try DaemonProcess(home: a.home)
        defer { da.stop() }
        let photo = try file("photo.jpg", count: 3_000_000, canary: "CANARY-QUOTA")
        try expectPeerlog(["put", "--home", a.home, group, "photo", "--value-file", photo])
        #expect(
            TestSupport.waitUntil(timeout: 60) { relay.stderr.contains("not keeping blob") },
            "the relay did not refuse the blob: \(relay.stderr.suffix(2_000))")
        #expect(relay.stderr.contains("quota is 1000000"), "\(relay.stderr.suffix(2_000))")
        let held = try blobs(relayHome)
        #expect(held.isEmpty, "the relay holds \(held)")
    }

    /// An encrypted group sequenced by a relay; Alice and Bob are never online together. Alice's
    /// daemon tells the relay of her blob, the relay fetches and keeps it without reading it, and
    /// Bob fetches it from the relay: equal bytes, and the canary inside is in no file of the relay.
    @Test func aRelayCarriesABlobBetweenMembersNeverOnlineTogether() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let relayHome = dir + "/relay"
        try expectPeerlog(["relay", "init", "--home", relayHome, "--name", "blind-relay"])
        let relayKey = try expectPeerlog(["relay", "key", "--home", relayHome])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard case .string(let relayIdentity)? = try peerlogJSON(["id", "--home", relayHome])["identity"] else {
            throw TestSupport.ProcessError(description: "relay id printed no identity")
        }
        let port = try TestSupport.freePort()
        let a = try makePerson("alice", in: dir)
        let b = try makePerson("bob", in: dir)
        let relay = try DaemonProcess(
            home: relayHome, listenPort: port, arguments: ["--allow", a.identity], command: ["relay", "run"])
        defer { relay.stop() }
        let group = try createGroup(a.home, "album")
        try expectPeerlog(["group", "add", "--home", a.home, group, b.identity])
        try expectPeerlog(["group", "sequencer", "--home", a.home, group, "relay", "127.0.0.1:\(port)", relayKey])
        func tentative(_ home: String) -> Int {
            guard case .array(let items)? = try? peerlogJSON(["log", "--home", home, group]) else { return -1 }
            return items.count { $0["status"] == .string("tentative") }
        }
        func keys(_ home: String) -> Int {
            guard case .array(let items)? = try? peerlogJSON(["log", "--home", home, group]) else { return -1 }
            return items.count { $0["type"] == .string("group.key") && $0["status"] == .string("committed") }
        }
        // Alice alone: the relay takes the group. Bob alone: he accepts.
        var da = try DaemonProcess(home: a.home)
        #expect(TestSupport.waitUntil(timeout: 60) { tentative(a.home) == 0 }, "\(da.stderr)\n\(relay.stderr)")
        da.stop()
        var db = try DaemonProcess(home: b.home, arguments: ["--peer", "127.0.0.1:\(port)", "--allow", relayIdentity])
        #expect(acceptWhenInvited(b.home, group), "bob got no invitation: \(db.stderr)")
        #expect(TestSupport.waitUntil(timeout: 60) { tentative(b.home) == 0 }, "\(db.stderr)")
        db.stop()

        // Alice again: she shares the key with Bob, then puts the photo; the relay fetches it.
        let canary = "CANARY-\(UInt64.random(in: 0...UInt64.max))"
        let photo = try file("photo.jpg", count: 3_000_000, canary: canary)
        da = try DaemonProcess(home: a.home)
        #expect(TestSupport.waitUntil(timeout: 60) { keys(a.home) >= 2 }, "alice shared no key: \(da.stderr)")
        try expectPeerlog(["put", "--home", a.home, group, "photo", "--value-file", photo])
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                tentative(a.home) == 0 && (try? blobs(relayHome))?.first?["whole"] == .bool(true)
            },
            "the relay did not fetch the photo: \((try? blobs(relayHome)) ?? [])\n\(relay.stderr.suffix(2_000))\nalice: \(da.stderr.suffix(3_000))"
        )
        da.stop()

        // Bob again, Alice offline: he gets the photo from the relay.
        db = try DaemonProcess(home: b.home, arguments: ["--peer", "127.0.0.1:\(port)", "--allow", relayIdentity])
        defer { db.stop() }
        let out = dir + "/photo.out"
        #expect(
            TestSupport.waitUntil(timeout: 60) {
                (try? TestSupport.peerlog(["get", "--home", b.home, group, "photo", "--out", out, "--wait", "5"]).status)
                    == 0
            }, "bob did not get the photo from the relay: \(db.stderr.suffix(2_000))")
        #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: photo))
        #expect(filesHolding(canary, under: relayHome).isEmpty, "\(filesHolding(canary, under: relayHome))")
        #expect(FileManager.default.contents(atPath: out)?.range(of: Data(canary.utf8)) != nil)
    }

    func freeBytes(_ path: String) -> Int {
        var s = statvfs()
        return statvfs(path, &s) == 0 ? Int(s.f_bavail) * Int(s.f_frsize) : -1
    }

    /// Bob's home is on a small tmpfs that fills in the middle of a fetch: one clear error in his
    /// daemon's log, nothing corrupt (`check` passes, the blob is not readable), and once space
    /// is freed the fetch resumes and reads back equal bytes. Needs root (mount).
    @Test(.enabled(if: getuid() == 0, "mounts a tmpfs (root only)"))
    func aDiskFullMidFetchSaysSoAndResumesOnceThereIsRoom() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let mountPoint = dir + "/small"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard try TestSupport.run("/bin/mount", ["-t", "tmpfs", "-o", "size=48m", "tmpfs", mountPoint]).status == 0
        else {
            Issue.record("cannot mount a tmpfs")
            return
        }
        defer { _ = try? TestSupport.run("/bin/umount", ["-l", mountPoint]) }
        let b = try makePerson("bob", in: mountPoint)
        let group = try createGroup(a.home, "films")
        try expectPeerlog(["group", "add", "--home", a.home, group, b.identity])
        let da = try DaemonProcess(home: a.home)
        defer { da.stop() }
        let db = try DaemonProcess(home: b.home, arguments: ["--peer", da.address, "--allow", a.identity])
        defer { db.stop() }
        #expect(acceptWhenInvited(b.home, group), "bob never got the invitation: \(db.stderr)")
        // Leave about 8 MB: room for the receipt, not for the 20 MB blob.
        let filler = mountPoint + "/filler"
        let fill = max(0, freeBytes(mountPoint) - 8_000_000)
        #expect(try TestSupport.run("/usr/bin/fallocate", ["-l", String(fill), filler]).status == 0)
        let film = try file("film.mkv", count: 20_000_000, canary: "film")
        try expectPeerlog(["put", "--home", a.home, group, "film", "--value-file", film])
        #expect(
            TestSupport.waitUntil(timeout: 60) { db.stderr.contains("cannot write chunk") },
            "bob's daemon did not say the disk is full: \(db.stderr.suffix(2_000))")
        #expect(db.stderr.contains("No space left"), "\(db.stderr.suffix(2_000))")
        let early = try TestSupport.peerlog([
            "get", "--home", b.home, group, "film", "--out", dir + "/early", "--wait", "1",
        ])
        #expect(early.status != 0, "a blob the disk could not hold was read: \(early.stdout)")
        // Room again: the fetch resumes by itself.
        try FileManager.default.removeItem(atPath: filler)
        let out = dir + "/film.out"
        try expectPeerlog(["get", "--home", b.home, group, "film", "--out", out, "--wait", "120"])
        #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: film))
        #expect(try TestSupport.peerlog(["check", "--home", b.home]).status == 0)
    }

    /// `export` carries the group's blobs after its log (docs/PROTOCOL.md §13): Bob, who never
    /// met Alice, imports the file and reads the photo; a copy with one byte of the photo changed
    /// imports the log but refuses the blob, and nothing of it is readable.
    @Test func anExportCarriesItsBlobsAndATamperedOneIsRefused() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try makePerson("alice", in: dir)
        let b = try makePerson("bob", in: dir)
        let c = try makePerson("carol", in: dir)
        let group = try createGroup(a.home, "album", plaintext: true)
        let photo = try file("photo.jpg", count: 2_500_000, canary: "photo")
        try expectPeerlog(["put", "--home", a.home, group, "photo", "--value-file", photo])
        let export = dir + "/album.export"
        try expectPeerlog(["export", "--home", a.home, group, export])
        let text = try String(contentsOfFile: export, encoding: .utf8)
        let pieces = text.split(separator: "\n").filter { $0.contains("\"kind\":\"blob_piece\"") }
        #expect(pieces.count == 39, "2,500,000 bytes in 64 KiB pieces: \(pieces.count)")

        let imported = try peerlogJSON(["import", "--home", b.home, export])
        #expect(imported["blobs"] == .int(1) && imported["taken"] == .bool(true), "\(imported)")
        let out = dir + "/photo.out"
        try expectPeerlog(["get", "--home", b.home, group, "photo", "--out", out, "--wait", "0"])
        #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: photo))
        // Importing again changes nothing: the blob is held.
        let again = try peerlogJSON(["import", "--home", b.home, export])
        #expect(again["blobs"] == .int(1) && again["taken"] == .bool(true), "\(again)")

        // One hex digit of a piece changed: the log is taken, the blob refused.
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let at = try #require(
            lines.firstIndex { $0.contains("\"kind\":\"blob_piece\"") && $0.contains("\"offset\":65536") })
        let range = try #require(lines[at].range(of: "\"data\":\""))
        let digit = lines[at].index(range.upperBound, offsetBy: 10)
        lines[at].replaceSubrange(digit...digit, with: lines[at][digit] == "0" ? "1" : "0")
        let tampered = dir + "/tampered.export"
        try lines.joined(separator: "\n").write(toFile: tampered, atomically: true, encoding: .utf8)
        let r = try TestSupport.peerlog(["import", "--home", c.home, tampered, "--json"])
        #expect(r.status == 2, "\(r.stdout)\n\(r.stderr)")
        let report = try JSON.parse(r.stdout)
        #expect(report["blobs"] == .int(0) && report["refused"] == .int(1), "\(r.stdout)")
        #expect(r.stdout.contains("do not hash to its id"), "\(r.stdout)")
        let refused = try TestSupport.peerlog([
            "get", "--home", c.home, group, "photo", "--out", dir + "/no", "--wait", "0",
        ])
        #expect(refused.status != 0 && refused.stderr.contains("not held whole"), "\(refused.stderr)")
        #expect(try blobs(c.home).allSatisfy { $0["whole"] == .bool(false) })
    }
}
