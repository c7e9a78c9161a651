import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Testing

/// Runs the built `peerlog` binary as a user would.
struct CLITests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    func peerlog(_ args: String...) throws -> TestSupport.ProcessResult { try TestSupport.peerlog(args) }

    func identity(_ home: String) throws -> String {
        let r = try peerlog("id", "--home", home, "--json")
        #expect(r.status == 0, "\(r.stderr)")
        guard case .string(let id)? = try JSON.parse(r.stdout)["identity"] else {
            throw TestSupport.ProcessError(description: "no identity in \(r.stdout)")
        }
        return id
    }

    @Test func initIdAndSafetyNumbers() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = dir + "/a"
        let b = dir + "/b"
        #expect(try peerlog("init", "--home", a, "--name", "alice").status == 0)
        #expect(try peerlog("init", "--home", b, "--name", "bob").status == 0)
        let ida = try identity(a)
        let idb = try identity(b)
        #expect(ida != idb && ida.hasPrefix("b") && ida.count == 53)
        let ab = try peerlog("safety-number", "--home", a, idb, "--json")
        let ba = try peerlog("safety-number", "--home", b, ida, "--json")
        #expect(try JSON.parse(ab.stdout)["safety_number"] == JSON.parse(ba.stdout)["safety_number"])
        let text = try peerlog("safety-number", "--home", a, idb)
        #expect(text.stdout.split(separator: "\n").filter { $0.hasPrefix("  ") }.count == 3)
    }

    @Test func errorsAreOneClearLine() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = dir + "/a"
        _ = try peerlog("init", "--home", a)
        let cert = try Data(contentsOf: URL(fileURLWithPath: a + "/device.cert"))
        // A second init is refused and changes nothing.
        let again = try peerlog("init", "--home", a)
        #expect(again.status == 1)
        #expect(again.stderr.split(separator: "\n").count == 1 && again.stderr.contains("already"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: a + "/device.cert")) == cert)
        // Not initialised.
        let missing = try peerlog("id", "--home", dir + "/nothing")
        #expect(missing.status == 1 && missing.stderr.contains("not initialised"))
        // Loose permissions on a secret.
        chmod(a + "/identity.key", 0o644)
        let loose = try peerlog("id", "--home", a)
        #expect(loose.status == 1 && loose.stderr.contains("chmod 600"))
        chmod(a + "/identity.key", 0o600)
        // Bad arguments.
        let bad = try peerlog("safety-number", "--home", a, "not-an-identity")
        #expect(bad.status != 0 && bad.stderr.split(separator: "\n").count == 1)
        let float = try peerlog(
            "receipt", "create", "--home", a, "--type", "app.x", "--body", "{\"x\": 1.5}", "--out", dir + "/r")
        #expect(float.status != 0 && float.stderr.contains("floating-point"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/r"))
    }

    @Test func inspectReceiptsFromPythonAndFromPeerlog() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let py = dir + "/py.receipt"
        let made = try JSON.parse(try TestSupport.python("receipt_interop.py", ["make", py, "2"]))
        let r = try peerlog("inspect", py, "--json")
        #expect(r.status == 0, "\(r.stderr)")
        let report = try JSON.parse(r.stdout)
        #expect(report["cid"] == made["cid"])
        #expect(report["signature"]?["valid"] == .bool(true))
        #expect(report["kind"] == .string("receipt"))

        let home = dir + "/h"
        _ = try peerlog("init", "--home", home)
        let out = dir + "/mine.receipt"
        let created = try peerlog(
            "receipt", "create", "--home", home, "--type", "app.note", "--counter", "2", "--body",
            "{\"hello\": \"world\", \"bytes\": {\"$bytes\": \"0102\"}}", "--out", out)
        #expect(created.status == 0, "\(created.stderr)")
        let verified = try JSON.parse(try TestSupport.python("receipt_interop.py", ["verify", out]))
        #expect(verified["valid"] == .bool(true))
        #expect(verified["cid"] == .string(created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let diag = try peerlog("inspect", out, "--diag")
        #expect(diag.stdout.contains("\"hello\": \"world\"") && diag.stdout.contains("h'0102'"))
        let certificate = try peerlog("inspect", home + "/device.cert")
        #expect(
            certificate.status == 0 && certificate.stdout.contains("kind:")
                && certificate.stdout.contains("certificate"))
    }

    @Test func inspectReportsBadSignaturesAndBadFiles() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let py = dir + "/py.receipt"
        _ = try TestSupport.python("receipt_interop.py", ["make", py])
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: py)))
        // Flip a bit in the receipt signature (the "sig" value follows the 3-byte key and a 2-byte head).
        let sigAt = Self.find([0x63, 0x73, 0x69, 0x67, 0x58, 0x40], in: bytes)! + 6
        bytes[sigAt] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: py))
        let tampered = try peerlog("inspect", py)
        #expect(tampered.status == 2)
        #expect(tampered.stdout.contains("INVALID"))

        let garbage = dir + "/garbage"
        try Data([0xa1, 0x61]).write(to: URL(fileURLWithPath: garbage))
        let g = try peerlog("inspect", garbage)
        #expect(g.status == 1 && g.stderr.contains("offset") && g.stderr.split(separator: "\n").count == 1)
        let empty = dir + "/empty"
        try Data().write(to: URL(fileURLWithPath: empty))
        #expect(try peerlog("inspect", empty).status == 1)
        let other = dir + "/other"
        try Data([0xa1, 0x61, 0x78, 0x01]).write(to: URL(fileURLWithPath: other))
        let o = try peerlog("inspect", other)
        #expect(o.status == 1 && o.stderr.contains("not a receipt, envelope or certificate"))
        #expect(try peerlog("inspect", dir + "/absent").status == 1)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<$0 + needle.count]) == needle }
    }
}
