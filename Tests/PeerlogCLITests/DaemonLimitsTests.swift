import Foundation
import PeerlogEncoding
import PeerlogNode
import PeerlogTestSupport
import Testing

/// The limits of docs/PROTOCOL.md §14.7 against a real daemon: what peers can make it hold
/// stays within them, and a burst of handshakes cannot lock a real peer out.
@Suite(.serialized)
struct DaemonLimitsTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    static let script = TestSupport.repoRoot + "/tools/interop/memory_peer.py"
    static let limits = NodeLimits()

    /// A daemon that lets in the identity of `memory_peer.py --seed 0e` (any of its devices).
    func daemon(launcher: [String] = []) throws -> DaemonProcess {
        let home = dir + "/node"
        _ = try TestSupport.peerlogOK(["init", "--home", home, "--name", "node"])
        let r = try TestSupport.run(TestSupport.python, [Self.script, "identity", "--seed", "0e"])
        guard case .string(let identity)? = try JSON.parse(r.stdout)["identity"] else {
            throw TestSupport.ProcessError(description: "no identity: \(r.stderr)")
        }
        return try DaemonProcess(home: home, arguments: ["--allow", identity], launcher: launcher)
    }

    static func residentBytes(_ pid: Int32) -> Int { DaemonRejectionTests.residentKiB(pid) * 1024 }

    @Test func partialMessagesFromManyDevicesOfOneIdentityStayWithinTheBudget() throws {
        let daemon = try daemon()
        defer { daemon.stop() }
        usleep(300_000)
        let baseline = Self.residentBytes(daemon.pid)

        // 100 devices of one identity each send 63 of 64 fragments of a 4 MiB message.
        let outPath = dir + "/peer.out"
        // Its standard input stays open (a pipe): it holds the connections until told or 60 s.
        let peer = try ChildProcess(
            TestSupport.python,
            [
                Self.script, "partial", "127.0.0.1", String(daemon.port), "--seed", "0e", "--connections", "100",
                "--fragments", "63", "--hold", "60",
            ], pipeInput: true, stdout: outPath, stderr: outPath, lifetime: 300)
        defer { peer.stop(grace: 5) }
        var peak = baseline
        let holding = TestSupport.waitUntil(timeout: 150) {
            peak = max(peak, Self.residentBytes(daemon.pid))
            return (try? String(contentsOfFile: outPath, encoding: .utf8))?.contains("\"open\"") ?? false
        }
        peak = max(peak, Self.residentBytes(daemon.pid))
        let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
        try #require(holding, "the peer did not finish sending: \(output)")
        let report = try JSON.parse(String(output.split(separator: "\n").first ?? ""))
        guard case .object(let reasons)? = report["reasons"], case .number(let openText)? = report["open"],
            let open = Int(openText)
        else {
            Issue.record("bad report \(output)")
            return
        }
        func refusals(naming limit: String) -> Int {
            reasons.reduce(0) { sum, entry in
                guard case .number(let n) = entry.1, entry.0.contains(limit) else { return sum }
                return sum + (Int(n) ?? 0)
            }
        }

        // Beyond the connection cap the daemon refuses; beyond the identity's share of the
        // reassembly budget it closes; what stays open fits in that share.
        let maxMessage = 4 << 20
        #expect(
            refusals(naming: "maxConnectionsPerIdentity") == 100 - Self.limits.maxConnectionsPerIdentity, "\(output)")
        #expect(refusals(naming: "reassemblyBytesPerIdentity") >= 1, "\(output)")
        #expect(open >= 1 && open <= Self.limits.reassemblyBytesPerIdentity / maxMessage, "\(output)")
        #expect(
            peak - baseline < Self.limits.reassemblyBudgetBytes,
            "RSS went from \(baseline >> 20) MiB to \(peak >> 20) MiB holding partial messages (budget \(Self.limits.reassemblyBudgetBytes >> 20) MiB)"
        )
        #expect(daemon.stderr.contains("reassemblyBytesPerIdentity"), "the daemon log names the limit")

        // Closing them gives the memory back.
        peer.input?.write(Data("close\n".utf8))
        try? peer.input?.close()
        _ = TestSupport.waitUntil(timeout: 20) { !peer.isRunning }
        var after = Self.residentBytes(daemon.pid)
        _ = TestSupport.waitUntil(timeout: 20) {
            after = Self.residentBytes(daemon.pid)
            return after - baseline < 12 << 20
        }
        #expect(
            after - baseline < 12 << 20,
            "RSS \(after >> 20) MiB after the peers closed; baseline \(baseline >> 20) MiB, peak \(peak >> 20) MiB")
        #expect(
            peak - after >= 8 << 20,
            "RSS did not drop after the peers closed: peak \(peak >> 20) MiB, after \(after >> 20) MiB")
        #expect(daemon.isRunning)
        print("RSS baseline \(baseline >> 10) KiB, peak \(peak >> 10) KiB, after close \(after >> 10) KiB")
    }

    @Test func aHandshakeBurstAtTheDescriptorLimitDoesNotStallARealPeer() throws {
        // 128 descriptors; the burst is larger than that and never handshakes.
        let daemon = try daemon(launcher: ["/usr/bin/prlimit", "--nofile=128:128"])
        defer { daemon.stop() }
        let r = try TestSupport.run(
            TestSupport.python,
            [Self.script, "burst", "127.0.0.1", String(daemon.port), "--seed", "0e", "--count", "300"], timeout: 60)
        let result = try JSON.parse(r.stdout)
        #expect(result["peer"] == .string(daemon.device), "\(r.stdout) \(r.stderr)")
        guard case .number(let text)? = result["handshake_seconds"], let seconds = Double(text) else {
            Issue.record("\(r.stdout) \(r.stderr)")
            return
        }
        #expect(seconds < 1, "the real peer's handshake took \(seconds) s behind a burst of 300 connections")
        #expect(daemon.stderr.contains("maxPendingHandshakes"), "the daemon log names the limit")
        #expect(daemon.isRunning)
    }
}
