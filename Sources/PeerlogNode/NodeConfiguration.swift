import Foundation
import Logging
import PeerlogChannel
import PeerlogEngine
import PeerlogModel
import PeerlogQuickCalls
import PeerlogSync

/// Everything a running node needs besides its home directory's keys and store.
public struct NodeConfiguration: Sendable {
    /// The TCP port a node listens on unless told otherwise (on 127.0.0.1 by default).
    public static let defaultPort = 7300

    /// Where to accept connections; nil means do not listen (dial only).
    public var listen: PeerAddress? = PeerAddress(host: "127.0.0.1", port: NodeConfiguration.defaultPort)
    /// Peers to keep connected to, redialed with backoff.
    public var peers: [PeerAddress] = []
    /// Identities let in besides our own and the members of groups we hold (pairing).
    public var allow: Set<IdentityID> = []
    /// Groups whose invitation the node accepts as soon as it arrives (`peerlog invite join`
    /// writes them to `HOME/pairings.conf` as `accept = GROUP`).
    public var autoAccept: Set<GroupID> = []
    /// Let in any device with a valid certificate (a relay that takes new groups from anyone).
    public var openAdmission = false
    /// Where to reach a relay instead of the address its groups name (e.g. one process of a
    /// relay served by several, or an address inside the relay's own network).
    public var relayAddresses: [DeviceID: PeerAddress] = [:]
    /// A relay's shared store of record (PostgreSQL), consulted before each assignment; its
    /// assignments are committed by `replica.runSequenceGate()`, which the caller runs (the
    /// relay's follower does).
    public var sequenceGate: (any SequenceGate)?
    /// The secure channel's settings (§14.8), among them the network id (`network` in the file).
    public var channel = ChannelConfiguration()
    /// Bounds on memory, connections and handshakes peers can make the node hold.
    public var limits = NodeLimits()
    /// How often the node looks for writes made by other processes (the CLI) to push them.
    public var pollInterval: Duration = .milliseconds(250)
    /// The most bytes of blobs fetched from peers this home keeps (16 GiB): over it, the least
    /// recently used are evicted (fetched again when read). Blobs put here are not counted.
    public var blobCacheBytes: UInt64 = BlobRetention.cacheBytes
    /// As a relay: the most bytes of blobs held (64 GiB). A member's `blob_have` past it is not
    /// taken (logged once per blob); the members keep serving that blob themselves.
    public var relayBlobQuotaBytes: UInt64 = 64 << 30
    /// How long a blob no value references is kept before it is deleted (24 hours).
    public var blobGrace: Duration = .seconds(BlobRetention.graceMs / 1_000)
    /// One tick of elected sequencers (§18): elections time out after 6–12 ticks, leaders
    /// send heartbeats every 2.
    public var electionTick: Duration = .milliseconds(100)
    /// The Unix socket `peerlog status` talks to; default `HOME/peerlog.sock`.
    public var controlSocket: String?
    /// The least severe level logged; `log-level` in the file (default `info`).
    public var logLevel: Logger.Level = .info
    /// Advertise and browse `_peerlog._tcp` over DNS-SD (mDNS on the LAN).
    public var discovery = true
    /// The advertised service instance name; default "DEVICE-NAME (short device id)".
    public var serviceName: String?
    /// How long a connection may carry nothing before it is closed (`idle-timeout` in the file,
    /// in seconds, 10…3600; default 90 s): the sessions send a keepalive every third of it
    /// (docs/PROTOCOL.md §15.2.12).
    public var idleTimeout: Duration = .seconds(90)
    /// The sync sessions' limits: the protocol's defaults with `idleTimeout` (held to 10 s…1 h).
    public var syncLimits: SyncLimits {
        var limits = SyncLimits()
        let ms = UInt64(min(max(idleTimeout.components.seconds, 10), 3600)) * 1000
        limits.idleTimeoutMs = ms
        limits.keepaliveIntervalMs = ms / 3
        return limits
    }
    /// Where the node counts what it does (docs/TOOLS.md#metrics); nil: the process's
    /// swift-metrics backend, if one was bootstrapped.
    public var metrics: NodeMetrics?

    /// The defaults: listen on 127.0.0.1:7300, no static peers, discovery on, admission limited
    /// to our identity and the members of our groups.
    public init() {}

    /// Reads a configuration file: one `key = value` per line, `#` starts a comment.
    /// Keys: `listen` (HOST:PORT or `none`), `peer` (repeatable), `allow` (identity, repeatable),
    /// `network` (network id), `control` (socket path), `log-level`, `discovery` (on/off),
    /// `accept` (group whose invitation to accept on arrival, repeatable), `idle-timeout` (seconds).
    public mutating func load(file path: String) throws {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw NodeError.invalidConfiguration(
                path: path, configurationLine: 0, "cannot read: \(error.localizedDescription)")
        }
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line =
                raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            let fail = { (why: String) in NodeError.invalidConfiguration(path: path, configurationLine: index + 1, why)
            }
            guard let eq = trimmed.firstIndex(of: "=") else { throw fail("expected key = value") }
            let key = trimmed[..<eq].trimmingCharacters(in: .whitespaces)
            let value = trimmed[trimmed.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            do {
                switch key {
                case "listen": listen = value == "none" ? nil : try PeerAddress(parsing: value, listening: true)
                case "peer": peers.append(try PeerAddress(parsing: value))
                case "allow": allow.insert(try IdentityID(string: value))
                case "accept": autoAccept.insert(try GroupID(string: value))
                case "network": channel.networkID = value
                case "control": controlSocket = value
                case "discovery":
                    guard let on = ["on": true, "off": false][value] else { throw fail("discovery must be on or off") }
                    discovery = on
                case "log-level":
                    logLevel = try Self.logLevel(named: value, setting: "log-level", failure: fail)
                case "idle-timeout":
                    guard let seconds = Int(value), (10...3600).contains(seconds) else {
                        throw fail("idle-timeout must be 10...3600 seconds")
                    }
                    idleTimeout = .seconds(seconds)
                case "blob-cache":
                    guard let mb = UInt64(value), mb <= 1 << 40 else {
                        throw fail("blob-cache must be 0...\(1 << 40) MB")
                    }
                    blobCacheBytes = mb * 1_000_000
                case "blob-grace":
                    guard let hours = UInt64(value), hours <= 24 * 365 else {
                        throw fail("blob-grace must be 0...\(24 * 365) hours")
                    }
                    blobGrace = .seconds(hours * 3_600)
                default: throw fail("unknown key \"\(key)\"")
                }
            } catch let error as NodeError {
                if error.code == .invalidConfiguration { throw error }
                throw fail("\(error)")
            } catch {
                throw fail("\(key): \(error)")
            }
        }
    }

    /// The control socket's path: `controlSocket` if set, else `HOME/peerlog.sock`.
    public func controlSocketPath(home: String) -> String { controlSocket ?? HomeLayout.controlSocket(home) }

    /// The log level named `text` (`trace` … `critical`); any other word throws `failure`
    /// of "SETTING must be one of trace, debug, …".
    public static func logLevel(
        named text: String, setting: String, failure: (String) -> any Error
    ) throws -> Logger.Level {
        guard let level = Logger.Level(rawValue: text) else {
            throw failure("\(setting) must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return level
    }
}
