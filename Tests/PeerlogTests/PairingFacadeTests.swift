import Foundation
import Peerlog
import PeerlogTestSupport
import Testing

/// Pairing by short code through the library alone (`import Peerlog`): an app links a second
/// device and invites a second person, each node running in-process on loopback.
@Suite struct PairingFacadeTests {
    func options(listen port: Int?) -> NetworkOptions {
        var o = NetworkOptions()
        o.listen = port.map { PeerAddress(host: "127.0.0.1", port: $0) }
        o.discovery = false  // loopback only (no mDNS outside a test namespace)
        o.pollInterval = .milliseconds(50)
        return o
    }

    /// Waits (without blocking the pool) until `condition` holds, for at most `seconds`.
    func eventually(_ seconds: Int = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
        for _ in 0..<(seconds * 20) {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Runs `peerlog`'s node on loopback and returns once it listens.
    func start(_ peerlog: Peerlog, listen: Int? = 0) async throws -> Task<Void, any Error> {
        let bound = AsyncStream<PeerAddress?>.makeStream()
        let task = Task { try await peerlog.run(options(listen: listen)) { bound.continuation.yield($0) } }
        var iterator = bound.stream.makeAsyncIterator()
        _ = await iterator.next()
        return task
    }

    @Test func anAppInvitesAPersonByCode() async throws {
        let ann = try await Peerlog.temporary(deviceName: "ann")
        let cat = try await Peerlog.temporary(deviceName: "cat")
        let group = try await ann.createGroup(named: "trip")
        let runs = [try await start(ann), try await start(cat, listen: nil)]
        let ticket = try await ann.createInviteCode(to: group, as: .admin)
        #expect(ticket.purpose == "invite" && ticket.group == group.string && ticket.role == "admin")

        let joined = try await cat.joinWithCode(code: ticket.code, peer: try PeerAddress(parsing: ticket.address))
        #expect(joined.group == group && joined.inviter == ann.identity && joined.nodeNotified)
        #expect(joined.safetyNumber == cat.safetyNumber(with: ann.identity))
        #expect(ann.safetyNumber(with: cat.identity) == cat.safetyNumber(with: ann.identity))
        // Cat's node dials Ann, receives the invitation and accepts it by itself.
        #expect(try await eventually { try await cat.group(group, view: .tentative)?.role == .admin })
        try await cat.put("plan", "train", in: group)
        #expect(await eventually { (try? await ann.get("plan", as: String.self, in: group)) == "train" })

        // The code was single use.
        await #expect(throws: PeerlogError.self) {
            try await cat.joinWithCode(code: ticket.code, peer: try PeerAddress(parsing: ticket.address))
        }
        for r in runs { r.cancel() }
        for r in runs { try await r.value }
    }

    @Test func anAppLinksASecondDevice() async throws {
        let first = try await Peerlog.temporary(deviceName: "laptop1")
        let group = try await first.createGroup(named: "mine")
        try await first.put("k", "v", in: group)
        let run = try await start(first)
        // The default lifetime (10 min): a busy machine may take over a minute to get here.
        let ticket = try await first.linkDevice()

        let home = try TestSupport.temporaryDirectory() + "/laptop2"
        // A wrong code: refused, nothing written.
        let parts = ticket.code.split(separator: "-")
        let wrong = "\(parts[0])-\(parts[1] == "0000" ? "1111" : "0000")-\(parts[2])"
        await #expect(throws: PeerlogError.self) {
            try await Peerlog.join(home: home, code: wrong, peer: try PeerAddress(parsing: ticket.address))
        }
        #expect(!FileManager.default.fileExists(atPath: home))

        let linked = try await Peerlog.join(
            home: home, code: ticket.code, peer: try PeerAddress(parsing: ticket.address), deviceName: "laptop2")
        #expect(linked.device.identity == first.identity && linked.device.device != first.deviceID)
        #expect(linked.holdsIdentityKey)
        let second = try await Peerlog.open(home: home, create: false)
        let secondRun = try await start(second, listen: nil)
        #expect(await eventually { (try? await second.get("k", as: String.self, in: group)) == "v" })
        for r in [run, secondRun] { r.cancel() }
        for r in [run, secondRun] { try await r.value }
    }
}
