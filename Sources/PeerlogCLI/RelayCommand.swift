import ArgumentParser
import Foundation
import Logging
import Peerlog
import PeerlogModel
import PeerlogNode
import PeerlogRelayPostgres
import PeerlogStatusServer
import ServiceLifecycle

/// `peerlog relay`: a store-and-forward peer that sequences the groups naming it (§19).
struct RelayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Run a relay: it keeps the groups that name it, serves them to their members, and sequences them.",
        discussion: """
            A relay is a node with its own key. A group uses it once a member commits \
            `peerlog group sequencer GROUP relay HOST:PORT KEY`; members then keep it connected, so \
            devices that are never online together still sync through it. Its store is SQLite in \
            HOME; with --postgres several relay processes (same key: `relay init --key-from`) share \
            one PostgreSQL database as the store of record.
            """,
        subcommands: [RelayInit.self, RelayRun.self, RelayKey.self]
    )
}

struct RelayInit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init", abstract: "Create the relay's keys in HOME (or copy them from another relay's home).")

    @OptionGroup var home: HomeOptions
    @Option(help: "Name shown to peers (default: relay@HOSTNAME).") var name: String?
    @Option(
        help: ArgumentHelp("Use the keys of this relay home (another process of the same relay).", valueName: "dir"))
    var keyFrom: String?

    func run() throws {
        let device: PeerlogDevice
        if let keyFrom {
            device = try Peerlog.initialize(home: home.path, copyingKeysFrom: keyFrom)
        } else {
            let label = name ?? "relay@\(DeviceCertificate.defaultName())"
            guard !label.isEmpty, label.utf8.count <= DeviceCertificate.maxNameBytes else {
                throw CLIError("--name must be 1...\(DeviceCertificate.maxNameBytes) bytes")
            }
            device = try Peerlog.initialize(home: home.path, deviceName: label)
        }
        print("Initialised relay \(home.path)")
        print("relay key: \(device.device)")
        print("groups use it with: peerlog group sequencer GROUP relay HOST:PORT \(device.device)")
    }
}

struct RelayKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key", abstract: "Print the relay's key (what groups name).")
    @OptionGroup var home: HomeOptions
    func run() throws { print(try Peerlog.deviceInfo(home: home.path).device) }
}

struct RelayRun: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the relay until Ctrl-C or SIGTERM.",
        discussion: """
            It lets in the members of the groups it holds. New groups come only from identities given \
            with --allow (or from anyone with --open). `peerlog status --home HOME` shows it running.
            """
    )

    @OptionGroup var home: HomeOptions
    @Option(help: ArgumentHelp("Address to accept members on (port 0 picks a free one).", valueName: "host:port"))
    var listen = "127.0.0.1:\(RelayRun.defaultPort)"
    @Option(
        name: .customLong("allow"),
        help: ArgumentHelp("An identity that may bring new groups to the relay (repeatable).", valueName: "identity"))
    var allow: [String] = []
    @Flag(help: "Let any device with a valid certificate connect and bring groups.") var open = false
    @Option(
        help: ArgumentHelp(
            "Share this PostgreSQL database with other processes of the relay (postgres://user@host:port/db).",
            valueName: "url"))
    var postgres: String?
    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel = "info"
    @Option(
        help: ArgumentHelp(
            "The most MB of members' blobs to keep (default 65536); a blob past it is not taken, and members keep serving it.",
            valueName: "MB"))
    var blobQuota: UInt64?
    @OptionGroup var httpOptions: HTTPOptions

    static let defaultPort = 7350

    func run() async throws {
        let level = try NodeConfiguration.logLevel(named: logLevel, setting: "--log-level", failure: { CLIError($0) })
        var settings = NodeConfiguration()
        settings.listen = try PeerAddress(parsing: listen, listening: true)
        settings.discovery = false  // a relay is reached by its address, not found on a LAN
        settings.openAdmission = open
        for text in allow { settings.allow.insert(try parseIdentity(text)) }
        settings.logLevel = level
        if let blobQuota {
            guard blobQuota <= 1 << 40 else { throw CLIError("--blob-quota is at most \(1 << 40) MB") }
            settings.relayBlobQuotaBytes = blobQuota * 1_000_000
        }
        let page = try httpOptions.prepare(program: "peerlog relay")
        settings.metrics = page?.metrics.node
        bootstrapLogging(level: level)
        let logger = Logger(label: "peerlog-relay")
        var opened: SharedRelayStore?
        if let postgres { opened = try await SharedRelayStore.open(url: postgres, logger: logger) }
        let shared = opened
        settings.sequenceGate = shared?.gate
        let node: PeerlogNode
        try home.requireIdentity(initCommand: "peerlog relay init")
        do {
            let key = try LocalDevice.load(home: home.path).device
            node = try PeerlogNode(
                home: home.path, configuration: settings, logger: logger,
                onListening: { address in
                    defer { page?.nodeIsListening() }
                    FileHandle.standardOutput.write(
                        Data("peerlog relay: key \(key) listening on \(address?.description ?? "none")\n".utf8))
                })
        } catch {
            throw CLIError("cannot open the relay in \(home.path): \(error)")
        }
        if shared != nil { logger.info("store of record: PostgreSQL (shared with the relay's other processes)") }
        if !open && allow.isEmpty {
            logger.notice("no --allow or --open: only members of groups this relay already holds can connect")
        }
        // Graceful shutdown goes in reverse order: the follower, the node, then the store's pool.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let shared { services.append(.init(service: shared.pool)) }
        services.append(.init(service: node))
        if let shared { services.append(.init(service: shared.follower(node.replica))) }
        try await StatusPageSetup.run(services, page: page.map { ($0, node) }, logger: logger)
    }
}
