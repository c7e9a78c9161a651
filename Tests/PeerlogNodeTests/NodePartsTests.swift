import Foundation
import PeerlogModel
import PeerlogTestSupport
import Synchronization
import Testing

@testable import PeerlogNode

struct PeerAddressTests {
    @Test func parsesHostsAndBracketedIPv6() throws {
        #expect(try PeerAddress(parsing: "127.0.0.1:7300") == PeerAddress(host: "127.0.0.1", port: 7300))
        #expect(try PeerAddress(parsing: "laptop.local:1") == PeerAddress(host: "laptop.local", port: 1))
        #expect(try PeerAddress(parsing: "[::1]:65535") == PeerAddress(host: "::1", port: 65535))
        #expect(try PeerAddress(parsing: "[::1]:65535").description == "[::1]:65535")
    }

    @Test(arguments: [
        "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", ":7300", "::1:7300", "[::1]7300", "host:port", "[::1:80",
    ])
    func refusesMalformed(_ text: String) {
        #expect(throws: NodeError(.invalidAddress, "", description: "", file: "", line: 0)) {
            try PeerAddress(parsing: text)
        }
    }
}

struct BackoffTests {
    @Test func growsFromOneSecondToSixtyWithJitter() {
        var rng = SeededRandom(seed: 7)
        var backoff = Backoff()
        var ceilings: [Int64] = []
        for _ in 0..<12 {
            let d = backoff.nextDelay(using: &rng)
            let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
            ceilings.append(ms)
        }
        let expected: [Int64] = [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000, 60000, 60000, 60000]
        for (ms, ceiling) in zip(ceilings, expected) {
            #expect(ms <= ceiling && ms >= max(ceiling / 2, 1000), "\(ms) outside [\(ceiling / 2), \(ceiling)]")
        }
        backoff.reset()
        let first = backoff.nextDelay(using: &rng)
        #expect(first == .seconds(1), "after a reset the first delay is 1 s (its jitter floor), got \(first)")
    }

    @Test func jitterSpreadsPeers() {
        var delays = Set<Duration>()
        for seed in 0..<20 {
            var rng = SeededRandom(seed: UInt64(seed))
            var b = Backoff()
            for _ in 0..<4 { _ = b.nextDelay(using: &rng) }
            delays.insert(b.nextDelay(using: &rng))
        }
        #expect(delays.count > 10, "20 peers after 5 failures picked only \(delays.count) distinct delays")
    }
}

struct TieBreakTests {
    let low = try! LocalDevice.deterministic(seed: [UInt8](repeating: 3, count: 32), name: "a", createdAt: 1).device
    let high = try! LocalDevice.deterministic(seed: [UInt8](repeating: 4, count: 32), name: "b", createdAt: 1).device

    @Test func bothSidesKeepTheSameConnection() {
        let (l, h) = low.bytes.lexicographicallyPrecedes(high.bytes) ? (low, high) : (high, low)
        // The connection dialed by the lower id survives. On the lower side it is outbound:
        #expect(TieBreak.keepNew(local: l, peer: h, newIsOutbound: true, existingIsOutbound: false))
        #expect(!TieBreak.keepNew(local: l, peer: h, newIsOutbound: false, existingIsOutbound: true))
        // On the higher side the same connection is inbound:
        #expect(TieBreak.keepNew(local: h, peer: l, newIsOutbound: false, existingIsOutbound: true))
        #expect(!TieBreak.keepNew(local: h, peer: l, newIsOutbound: true, existingIsOutbound: false))
    }

    @Test func sameDirectionReplacesTheOldConnection() {
        #expect(TieBreak.keepNew(local: low, peer: high, newIsOutbound: true, existingIsOutbound: true))
        #expect(TieBreak.keepNew(local: low, peer: high, newIsOutbound: false, existingIsOutbound: false))
    }
}

struct ConfigurationFileTests {
    func load(_ text: String) throws -> NodeConfiguration {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try text.write(toFile: dir + "/daemon.conf", atomically: true, encoding: .utf8)
        var c = NodeConfiguration()
        try c.load(file: dir + "/daemon.conf")
        return c
    }

    @Test func readsEveryKey() throws {
        let identity = try LocalDevice.deterministic(seed: [UInt8](repeating: 5, count: 32), name: "x", createdAt: 1)
            .identity
        let c = try load(
            """
            # a comment
            listen = 0.0.0.0:7400
            peer = 10.0.0.2:7300   # trailing comment
            peer = [::1]:7301
            allow = \(identity)
            network = lab
            log-level = debug
            blob-cache = 2000
            blob-grace = 48
            """)
        #expect(c.blobCacheBytes == 2_000_000_000 && c.blobGrace == .seconds(48 * 3_600))
        #expect(c.listen == PeerAddress(host: "0.0.0.0", port: 7400))
        #expect(c.peers == [PeerAddress(host: "10.0.0.2", port: 7300), PeerAddress(host: "::1", port: 7301)])
        #expect(c.allow == [identity])
        #expect(c.channel.networkID == "lab")
        #expect(c.logLevel == .debug)
        #expect(try load("listen = none").listen == nil)
    }

    @Test func errorsNameTheLine() throws {
        do {
            _ = try load("peer = 1.2.3.4:9\nbogus = 1")
            Issue.record("accepted an unknown key")
        } catch let e as NodeError {
            #expect(e.code == .invalidConfiguration && e.configurationLine == 2 && e.detail.contains("bogus"), "\(e)")
        }
        do {
            _ = try load("\n\npeer = nowhere")
            Issue.record("accepted a bad address")
        } catch let e as NodeError {
            #expect(e.code == .invalidConfiguration && e.configurationLine == 3 && e.detail.contains("nowhere"), "\(e)")
        }
        for bad in ["blob-cache = -1", "blob-cache = lots", "blob-grace = 9000"] {
            #expect(throws: NodeError.self) { _ = try load(bad) }
        }
        do {
            _ = try load("log-level = loud")
            Issue.record("accepted a bad level")
        } catch let e as NodeError {
            #expect("\(e)".contains("log-level must be one of"))
        }
    }
}

struct ConnectionAdmissionTests {
    @Test func pendingHandshakesCloseTheOldestBeyondCapacity() {
        let pending = PendingHandshakes(capacity: 2)
        final class Closed: Sendable {
            let ids = Mutex<[UInt64]>([])
            var value: [UInt64] { ids.withLock { $0 } }
        }
        let closed = Closed()
        func begin(_ id: UInt64) {
            for close in pending.begin(id, close: { closed.ids.withLock { $0.append(id) } }) { close() }
        }
        begin(1)
        begin(2)
        #expect(closed.value == [])
        begin(3)
        #expect(closed.value == [1] && pending.count == 2)
        pending.end(2)  // finished its handshake
        begin(4)
        #expect(closed.value == [1] && pending.count == 2)
        begin(5)
        #expect(closed.value == [1, 3])
    }

    @Test func connectionsPerIdentityAreCountedUntilClosed() throws {
        let connections = IdentityConnections(limit: 2, total: 3)
        let identity = try LocalDevice.deterministic(seed: [9], name: "x", createdAt: 1).identity
        let other = try LocalDevice.deterministic(seed: [8], name: "y", createdAt: 1).identity
        let third = try LocalDevice.deterministic(seed: [7], name: "z", createdAt: 1).identity
        #expect(connections.admit(identity) == nil && connections.admit(identity) == nil)
        #expect(connections.admit(identity)?.contains("(maxConnectionsPerIdentity)") == true)
        connections.release(identity)
        #expect(connections.admit(identity) == nil)
        #expect(connections.count(identity) == 2)
        // The node-wide cap: a third identity's first connection passes, the next is refused.
        #expect(connections.admit(other) == nil)
        #expect(connections.admit(third) == "3 connections are open (maxConnections)")
        connections.release(other)
        #expect(connections.admit(third) == nil && connections.all == 3)
        connections.release(other)  // not counted: changes nothing
        #expect(connections.all == 3)
    }

    @Test func queuedMessageBytesAreCountedNodeWide() {
        let queued = QueuedMessageBytes(limit: 100)
        queued.add(60)
        queued.add(40)
        #expect(!queued.isOver && queued.total == 100)
        queued.add(1)
        #expect(queued.isOver)
        queued.remove(41)
        #expect(!queued.isOver && queued.total == 60)
    }

    @Test func pendingHandshakesUseAQuarterOfTheDescriptors() {
        let limits = NodeLimits()
        #expect(limits.pendingHandshakeCapacity(fileDescriptorLimit: 1 << 20) == limits.maxPendingHandshakes)
        #expect(limits.pendingHandshakeCapacity(fileDescriptorLimit: 128) == 32)
        #expect(limits.pendingHandshakeCapacity(fileDescriptorLimit: 10) == 8)
        #expect(limits.connectionCapacity(fileDescriptorLimit: 1 << 20) == limits.maxConnections)
        #expect(limits.connectionCapacity(fileDescriptorLimit: 256) == 128)
        #expect(limits.connectionCapacity(fileDescriptorLimit: 10) == 16)
        #expect(FileDescriptorLimit.raiseToHard() >= 128)
    }
}
