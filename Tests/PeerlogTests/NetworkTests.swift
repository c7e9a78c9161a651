import Foundation
import Peerlog
import PeerlogTestSupport
import Testing

@Suite struct NetworkTests {
    func options(listen port: Int?, peers: [Int] = [], allow: Set<IdentityID> = []) -> NetworkOptions {
        var o = NetworkOptions()
        o.listen = port.map { PeerAddress(host: "127.0.0.1", port: $0) }
        o.peers = peers.map { PeerAddress(host: "127.0.0.1", port: $0) }
        o.allow = allow
        o.discovery = false  // loopback only (no mDNS outside a test namespace)
        o.pollInterval = .milliseconds(50)
        return o
    }

    @Test func twoInstancesOnLoopbackConvergeAndATentativeWriteTurnsCommitted() async throws {
        let ann = try await Peerlog.temporary(deviceName: "ann")
        let ben = try await Peerlog.temporary(deviceName: "ben")
        let group = try await ann.createGroup(named: "notes")
        try await ann.invite(ben.identity, to: group)
        let benSaw = Collector(ben.changes(after: ChangeCursor(rawValue: 0)))
        let annSaw = Collector(ann.changes(in: group))
        // Port 0: the system picks a free port, and ben dials what ann actually bound.
        let bound = AsyncStream<PeerAddress?>.makeStream()
        let annRun = Task { try await ann.run(options(listen: 0)) { bound.continuation.yield($0) } }
        var iterator = bound.stream.makeAsyncIterator()
        let port = try #require(await iterator.next()??.port)
        let runs = [annRun, Task { try await ben.run(options(listen: nil, peers: [port], allow: [ann.identity])) }]

        #expect(
            await benSaw.wait { c in c.contains { if case .invited(let g, _) = $0.event { g == group } else { false } }
            })
        #expect(try await ben.invitations().map(\.id) == [group])
        try await ben.acceptInvitation(to: group)
        try await ben.put("todo/1", "buy milk", in: group)
        // Ben sees his write at once, tentative; ann (the sequencer) orders it; it turns committed.
        #expect(await benSaw.wait { _ in benSaw.entities.contains { $0.key == "todo/1" && !$0.isTentative } })
        let bens = benSaw.entities.filter { $0.key == "todo/1" }
        #expect(bens.first?.isTentative == true && bens.last?.isTentative == false)
        #expect(try bens.last?.newValue(as: String.self) == "buy milk")
        #expect(await annSaw.wait { _ in annSaw.entities.contains { $0.key == "todo/1" } })
        #expect(try await ann.get("todo/1", as: String.self, in: group) == "buy milk")
        let status = await ann.networkStatus
        #expect(status?.peers.contains { $0.state == .connected } == true)
        // The stream of statuses (awaited, never blocking a cooperative thread) shows the group.
        var updates = ann.statusUpdates(every: .milliseconds(100)).makeAsyncIterator()
        let update = await updates.next()
        // Every status type is named with `import Peerlog` alone (review B2).
        let entry: NodeGroupStatus? = update?.groups.first { $0.id == group.string }
        let peers: [PeerStatus] = update?.peers ?? []
        let lags: [GroupPeerStatus] = entry?.peers ?? []
        #expect(entry?.sequencer.map { (_: SequencerStatus) in true } == true && !peers.isEmpty && lags.count <= 1)
        #expect(update?.groups.contains { $0.id == group.string } == true, "\(String(describing: update))")

        for r in runs { r.cancel() }
        for r in runs { try await r.value }
        #expect(await ann.networkStatus == nil)
        #expect(await ben.networkStatus == nil)
        // Cancelling closed the listener and removed the control socket.
        #expect(!FileManager.default.fileExists(atPath: ann.home + "/peerlog.sock"))
        #expect(throws: (any Error).self) { try BlockingConnect.connect(port: port) }
    }

    /// A script's `peerlog put` is another process with its own `Peerlog` on the daemon's home:
    /// it tells the daemon (`wrote` on the control socket), which offers the write at once; an
    /// app's write beside its own running node is offered at once as well. Ann's node polls once
    /// an hour here, so without either Ben would not have the write within the wait.
    @Test func aWriteByAnotherProcessIsOfferedWithoutWaitingForThePoll() async throws {
        let ann = try await Peerlog.temporary(deviceName: "ann")
        let ben = try await Peerlog.temporary(deviceName: "ben")
        let group = try await ann.createGroup(named: "notes")
        try await ann.invite(ben.identity, to: group)
        let benSaw = Collector(ben.changes(after: ChangeCursor(rawValue: 0)))
        var annOptions = options(listen: 0)
        annOptions.pollInterval = .seconds(3_600)
        let bound = AsyncStream<PeerAddress?>.makeStream()
        let annRun = Task { try await ann.run(annOptions) { bound.continuation.yield($0) } }
        var iterator = bound.stream.makeAsyncIterator()
        let port = try #require(await iterator.next()??.port)
        let runs = [annRun, Task { try await ben.run(options(listen: nil, peers: [port], allow: [ann.identity])) }]
        #expect(
            await benSaw.wait { c in c.contains { if case .invited(let g, _) = $0.event { g == group } else { false } }
            })
        try await ben.acceptInvitation(to: group)
        try await ben.put("from/ben", "hello", in: group)
        #expect(await benSaw.wait { _ in benSaw.entities.contains { $0.key == "from/ben" && !$0.isTentative } })

        let script = try await Peerlog.open(home: ann.home, create: false)
        try await script.put("from/script", "written by another process", in: group)
        #expect(await benSaw.wait { _ in benSaw.entities.contains { $0.key == "from/script" } })
        // The app's own write, beside its running node, is offered at once too.
        try await ann.put("from/app", "written beside the node", in: group)
        #expect(await benSaw.wait { _ in benSaw.entities.contains { $0.key == "from/app" } })

        for r in runs { r.cancel() }
        for r in runs { try await r.value }
    }

    /// A value that references a blob is fetched as soon as it arrives, not at the node's next
    /// tick: Ben's node never ticks here (its poll and election ticks are an hour), so before the
    /// blob transfers learned the connections on each ingest they waited for a tick to ask.
    @Test func aBlobIsFetchedWithoutWaitingForATick() async throws {
        let ann = try await Peerlog.temporary(deviceName: "ann")
        let ben = try await Peerlog.temporary(deviceName: "ben")
        let group = try await ann.createGroup(named: "photos", encrypted: false)
        try await ann.invite(ben.identity, to: group)
        let benSaw = Collector(ben.changes(after: ChangeCursor(rawValue: 0)))
        let bound = AsyncStream<PeerAddress?>.makeStream()
        // Ben never ticks, so never pings: on a busy machine this test can outlast the default
        // idle timeout, and Ann must not close Ben as silent meanwhile.
        var annOptions = options(listen: 0)
        annOptions.idleTimeout = .seconds(3_600)
        let annRun = Task { [annOptions] in try await ann.run(annOptions) { bound.continuation.yield($0) } }
        var iterator = bound.stream.makeAsyncIterator()
        let port = try #require(await iterator.next()??.port)
        var benOptions = options(listen: nil, peers: [port], allow: [ann.identity])
        benOptions.pollInterval = .seconds(3_600)
        benOptions.electionTick = .seconds(3_600)
        benOptions.idleTimeout = .seconds(3_600)
        let runs = [annRun, Task { try await ben.run(benOptions) }]
        #expect(
            await benSaw.wait { c in c.contains { if case .invited(let g, _) = $0.event { g == group } else { false } }
            })
        try await ben.acceptInvitation(to: group)
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let photo = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) })
        try photo.write(to: URL(fileURLWithPath: dir + "/photo"))
        try await ann.put("photo", file: dir + "/photo", in: group)
        var held = false
        for _ in 0..<600 where !held {
            held = try await ben.blob("photo", in: group)?.isHeld == true
            if !held { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(held, "Ben never fetched the blob without a tick")
        if held { #expect(try await ben.blobData("photo", in: group) == photo) }
        for r in runs { r.cancel() }
        for r in runs { try await r.value }
    }

    @Test func aSecondRunOnTheSameInstanceIsRefused() async throws {
        let log = try await Peerlog.temporary()
        let first = Task { try await log.run(options(listen: 0)) }
        // An async wait: a blocking one would hold a thread of the cooperative pool the node needs.
        var waited = 0
        while await log.networkStatus == nil, waited < 1_200 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }
        #expect(await log.networkStatus != nil)
        await #expect(throws: PeerlogError.self) { try await log.run(options(listen: nil)) }
        first.cancel()
        try await first.value
    }
}

/// A plain TCP connect, to see whether anything still listens.
enum BlockingConnect {
    struct Refused: Error {}
    static func connect(port: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if r != 0 { throw Refused() }
    }
}
