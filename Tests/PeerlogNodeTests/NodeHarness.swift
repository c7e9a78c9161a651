import Logging
import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import Synchronization

@testable import PeerlogNode

/// Several nodes, each a real `NodeHub` (its `NodeStateMachine`, real `SyncSession`s, a real
/// in-memory replica) run inline on the test's thread, wired to each other by in-memory links
/// instead of sockets. Messages and closes travel through one FIFO queue that `pump()` drains;
/// time is a manual clock that `advance(_:)` moves, ticking every hub.
final class NodeHarness {
    /// The harness's time; every replica and hub reads it.
    final class Clock: Sendable {
        private let value = Mutex<UInt64>(1_700_000_000_000)
        func now() -> UInt64 { value.withLock { $0 } }
        func advance(_ ms: UInt64) { value.withLock { $0 += ms } }
    }

    struct Node {
        let device: LocalDevice
        let replica: Replica
        let hub: NodeHub
    }

    /// What travels between hubs, in order.
    private enum Delivery {
        case message(node: Int, connection: UInt64, [UInt8])
        case closed(node: Int, connection: UInt64, peer: DeviceID, reason: ChannelCloseReason)
    }

    /// One connection: end 0 dialed, end 1 accepted. Each end has its own connection id on its node.
    struct Link {
        let nodes: (Int, Int)
        let ids: (UInt64, UInt64)
        /// An end that closed (or saw the close) receives nothing more.
        var open = (true, true)
        /// Why it ended, as each end's channel reports it.
        var reasons: (ChannelCloseReason?, ChannelCloseReason?) = (nil, nil)
    }

    /// The queue the hubs' send and close closures append to (they are `@Sendable`).
    private final class Wire: Sendable {
        let queue = Mutex<[Delivery]>([])
        let closes = Mutex<[(link: Int, end: Int, reason: NodeCloseReason)]>([])
    }

    let clock = Clock()
    private(set) var nodes: [Node] = []
    private(set) var links: [Link] = []
    private let wire = Wire()
    private var nextID: UInt64 = 0
    let cadence = NodeStateMachine.Cadence(poll: 250, election: 100)

    /// `names.count` nodes; each lets in every other's identity (as pairing would).
    convenience init(_ names: [String]) throws {
        try self.init(
            devices: names.map {
                try LocalDevice.deterministic(seed: Array("harness/\($0)".utf8), name: $0, createdAt: 1)
            })
    }

    /// One node per device (several may share an identity); each lets in every other's identity.
    init(devices: [LocalDevice]) throws {
        var logger = Logger(label: "harness")
        logger.logLevel = .critical
        for device in devices {
            let clock = clock
            let replica = Replica(store: try Store(), device: device, clock: { clock.now() })
            let hub = NodeHub(
                replica: replica, device: device, allow: Set(devices.map(\.identity)), logger: logger, cadence: cadence,
                clock: { clock.now() }, executor: .inline)
            nodes.append(Node(device: device, replica: replica, hub: hub))
        }
        for node in nodes { node.hub.startInline() }
    }

    /// Node `i` dials node `j`; both hubs hear `established` (as after a handshake each one's
    /// `authorize` allowed). Returns the link's index.
    @discardableResult
    func connect(_ i: Int, _ j: Int) -> Int {
        let index = links.count
        nextID += 2
        let ids = (nextID - 1, nextID)
        links.append(Link(nodes: (i, j), ids: ids))
        let now = clock.now()
        nodes[i].hub.established(ref(link: index, end: 0, id: ids.0, outbound: true, peer: nodes[j].device, since: now))
        nodes[j].hub.established(
            ref(link: index, end: 1, id: ids.1, outbound: false, peer: nodes[i].device, since: now))
        settle()
        return index
    }

    private func ref(link: Int, end: Int, id: UInt64, outbound: Bool, peer: LocalDevice, since: UInt64) -> ConnectionRef
    {
        let wire = wire
        let other = end == 0 ? links[link].nodes.1 : links[link].nodes.0
        let otherID = end == 0 ? links[link].ids.1 : links[link].ids.0
        return ConnectionRef(
            info: NodeConnection(
                id: id, outbound: outbound, remote: "harness-\(link)", peer: peer.certificate, since: since),
            send: { bytes in wire.queue.withLock { $0.append(.message(node: other, connection: otherID, bytes)) } },
            close: { reason in wire.closes.withLock { $0.append((link, end, reason)) } }
        )
    }

    /// Turns closes the hubs asked for into deliveries: the closing end hears its own close at
    /// once, the other end after the messages already on their way to it (the close record).
    private func settle() {
        let closes = wire.closes.withLock { c in
            defer { c = [] }
            return c
        }
        for (index, end, reason) in closes {
            var link = links[index]
            let (me, other) = end == 0 ? (link.nodes.0, link.nodes.1) : (link.nodes.1, link.nodes.0)
            let (myID, otherID) = end == 0 ? (link.ids.0, link.ids.1) : (link.ids.1, link.ids.0)
            guard end == 0 ? link.open.0 : link.open.1 else { continue }
            if end == 0 {
                link.open.0 = false
                link.reasons.0 = .local(reason.description)
            } else {
                link.open.1 = false
                link.reasons.1 = .local(reason.description)
            }
            links[index] = link
            nodes[me].hub.closed(
                myID, peer: nodes[other].device.device, remote: "harness-\(index)",
                reason: "\(ChannelCloseReason.local(reason.description))")
            wire.queue.withLock {
                $0.append(
                    .closed(
                        node: other, connection: otherID, peer: nodes[me].device.device,
                        reason: .remote(reason.description)))
            }
        }
    }

    private func isOpen(node: Int, connection: UInt64) -> Bool {
        links.contains {
            ($0.nodes.0 == node && $0.ids.0 == connection && $0.open.0)
                || ($0.nodes.1 == node && $0.ids.1 == connection && $0.open.1)
        }
    }

    /// Delivers queued messages and closes until none is left.
    func pump(limit: Int = 1_000_000) {
        var steps = 0
        while steps < limit {
            settle()
            guard let next = wire.queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return }
            steps += 1
            switch next {
            case .message(let node, let connection, let bytes):
                guard isOpen(node: node, connection: connection) else { continue }
                nodes[node].hub.received(bytes, on: connection, processed: {})
            case .closed(let node, let connection, let peer, let reason):
                guard
                    let index = links.firstIndex(where: {
                        ($0.nodes.0 == node && $0.ids.0 == connection) || ($0.nodes.1 == node && $0.ids.1 == connection)
                    })
                else { continue }
                let end0 = links[index].nodes.0 == node && links[index].ids.0 == connection
                guard end0 ? links[index].open.0 : links[index].open.1 else { continue }
                if end0 {
                    links[index].open.0 = false
                    links[index].reasons.0 = reason
                } else {
                    links[index].open.1 = false
                    links[index].reasons.1 = reason
                }
                nodes[node].hub.closed(connection, peer: peer, remote: "harness-\(index)", reason: "\(reason)")
            }
        }
    }

    /// Moves time on by `ms` in steps of the smallest cadence, ticking every hub and pumping
    /// after each step (a write by "another process" is noticed by the change-stamp poll).
    func advance(_ ms: UInt64) {
        let step = min(cadence.poll, cadence.election)
        var passed: UInt64 = 0
        while passed < ms {
            clock.advance(step)
            passed += step
            for node in nodes { node.hub.tickNow() }
            pump()
        }
    }

    /// End 0 of the link closes (as a lid closing would), and the close reaches the other end.
    func disconnect(_ link: Int) {
        wire.closes.withLock { $0.append((link, 0, .session("lid closed"))) }
        pump()
    }

    /// Whether both ends of the link are still open.
    func isLive(_ link: Int) -> Bool { links[link].open == (true, true) }

    func hashes(_ group: GroupID) throws -> [[[UInt8]]] {
        try nodes.map {
            [
                try $0.replica.stateHash(of: group, view: .committed),
                try $0.replica.stateHash(of: group, view: .tentative),
            ]
        }
    }
}
