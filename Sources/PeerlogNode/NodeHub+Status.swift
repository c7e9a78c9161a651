import Foundation
import PeerlogEngine
import PeerlogModel
import PeerlogSync

extension NodeHub {
    /// Answers one control-socket request line (on the hub's queue: status reads the replica).
    func answer(_ line: String, reply: @escaping @Sendable ([UInt8]) -> Void) {
        queueAsync { [self] in
            switch line {
            case "ping":
                reply(Array(#"{"ok":true}"#.utf8))
            case "status":
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                reply((try? encoder.encode(buildStatus())).map { Array($0) } ?? ControlReply.error("cannot encode status"))
            default:
                reply(ControlReply.error("unknown request \"\(line.prefix(64))\" (known: status, ping)"))
            }
        }
    }

    /// Must run on the hub's queue.
    func buildStatus() -> NodeStatus {
        let dialers = dialerStatus.value()
        var peers = dialers
        let dialedDevices = Set(dialers.compactMap(\.device))
        let sessionStatus = sessionsSnapshot()
        // Connections a dialer does not already show (inbound ones, mostly).
        for (connection, _) in sessionStatus where !dialedDevices.contains(connection.peer.device.string) {
            peers.append(PeerStatus(
                address: connection.remote, state: "connected", direction: connection.outbound ? "outbound" : "inbound",
                source: connection.outbound ? "static" : "inbound",
                device: connection.peer.device.string, name: connection.peer.name, connectedSince: connection.since
            ))
        }
        var groups: [GroupStatus] = []
        for group in (try? replica.groupIDs()) ?? [] {
            let name = (try? replica.state(of: group, view: .tentative))??.name ?? ""
            let committed = (try? replica.vector(of: group).committed) ?? 0
            let tentative = (try? replica.tentativeCount(of: group)) ?? 0
            var lags: [GroupPeerStatus] = []
            for (connection, status) in sessionStatus {
                guard let g = status.groups.first(where: { $0.group == group }) else { continue }
                lags.append(GroupPeerStatus(
                    device: connection.peer.device.string, peerCommitted: g.peerCommitted,
                    behind: g.peerCommitted.map { $0 > committed ? $0 - committed : 0 } ?? 0,
                    ahead: g.peerCommitted.map { committed > $0 ? committed - $0 : 0 } ?? 0,
                    caughtUp: g.caughtUpReceived, itemsReceived: g.received.items, itemsSent: g.sent.items
                ))
            }
            groups.append(GroupStatus(id: group.string, name: name, committed: committed, tentative: tentative, peers: lags))
        }
        return NodeStatus(
            device: device.device.string, identity: device.identity.string, name: device.certificate.name,
            listening: listening.value, peers: peers, groups: groups,
            recentlyClosed: recentCloses().map { ClosedStatus(device: $0.peer?.string, address: $0.remote, reason: $0.reason, at: $0.at) },
            discoveryUnavailable: discoveryState.value.unavailable, discovery: discoveryState.value.enabled
        )
    }
}
