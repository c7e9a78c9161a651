import Foundation
import PeerlogEncoding
import PeerlogTestSupport
import Synchronization
import Testing

/// Keepalive and idle timeout (docs/PROTOCOL.md §15.2.12) against a real daemon with
/// `idle-timeout = 10`: three admitted Python peers hold their connections and say nothing
/// more. The one that sent no hello and the one whose hello listed `keepalive` are closed with
/// `error idle` once 10 s passed (not before); the latter was pinged meanwhile. The one whose
/// hello lacked the capability (a peer from before keepalives) is kept.
struct KeepaliveTests {
    @Test func silentPeersAreClosedAfterTheIdleTimeoutAndPingsKeepTheOthers() throws {
        let dir = try TestSupport.temporaryDirectory()
        let home = dir + "/host"
        try TestSupport.peerlogOK(["init", "--home", home, "--name", "host"])
        try "idle-timeout = 10\n".write(toFile: home + "/daemon.conf", atomically: true, encoding: .utf8)
        let seeds = ["a1", "a2", "a3"]
        var allow: [String] = []
        for seed in seeds {
            guard
                case .string(let identity)? = try JSON.parse(
                    try TestSupport.python("sync_client.py", ["identity", "--seed", seed]))["identity"]
            else { throw TestSupport.ProcessError(description: "no identity for seed \(seed)") }
            allow += ["--allow", identity]
        }
        let daemon = try DaemonProcess(home: home, arguments: allow)
        defer { daemon.stop() }

        let modes = ["none", "keepalive", "plain"]
        let results = Mutex<[String: JSON]>([:])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: modes.count) { i in
            do {
                let out = try TestSupport.python(
                    "sync_client.py",
                    [
                        "silent", "127.0.0.1", String(daemon.port), "--seed", seeds[i], "--hello", modes[i],
                        "--timeout", modes[i] == "plain" ? "16" : "120",
                    ])
                let parsed = try JSON.parse(out)
                results.withLock { $0[modes[i]] = parsed }
            } catch {
                failures.withLock { $0.append("\(modes[i]): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let r = results.withLock { $0 }
        func closedAfter(_ mode: String) -> Double? {
            if case .number(let text)? = r[mode]?["closed_after"] { return Double(text) }
            return nil
        }
        for mode in ["none", "keepalive"] {
            let after = closedAfter(mode)
            #expect(after.map { $0 >= 9.5 } == true, "\(mode): closed after \(String(describing: after)), before 10 s")
            #expect(r[mode]?["error"] == .string("idle"), "\(mode): \(String(describing: r[mode]))\n\(daemon.stderr)")
        }
        if case .number(let pings)? = r["keepalive"]?["pings"], let n = Int(pings) {
            #expect(n >= 2, "\(n) pings in 10 s at one per 3.3 s")
        } else {
            Issue.record("keepalive: \(String(describing: r["keepalive"]))")
        }
        #expect(closedAfter("plain") == nil, "a peer without keepalive was closed: \(String(describing: r["plain"]))")
        #expect(r["plain"]?["pings"] == .int(0), "\(String(describing: r["plain"]))")
        #expect(daemon.stderr.contains("idle"), "the daemon logged no idle close\n\(daemon.stderr)")
    }
}
