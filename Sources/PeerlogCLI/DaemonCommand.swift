import ArgumentParser
import Foundation
import Logging
import Peerlog
import PeerlogModel
import PeerlogNode
import PeerlogStatusServer
import ServiceLifecycle

/// `peerlog daemon`: the long-running node.
struct Daemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run the node: listen, dial peers, sync every shared group (stop with Ctrl-C or SIGTERM).",
        discussion: """
            Settings come from --config FILE (default: HOME/daemon.conf when it exists), then the options.
            The file has one `key = value` per line: listen, peer (repeatable), allow (repeatable), network,
            control, log-level, discovery (on/off), idle-timeout (seconds, 10-3600, default 90: a connection
            silent that long is closed; keepalives go every third of it). `peerlog status` asks the running daemon through
            HOME/peerlog.sock. By default the daemon advertises `_peerlog._tcp` and connects to LAN peers
            that share a group with it (avahi-daemon must run; without it, static peers still work).
            """
    )

    @OptionGroup var home: HomeOptions

    @Option(
        help: ArgumentHelp(
            "Address to accept peers on, or `none` (default 127.0.0.1:\(NodeConfiguration.defaultPort); port 0 picks a free one).",
            valueName: "host:port"))
    var listen: String?

    @Option(
        name: .customLong("peer"),
        help: ArgumentHelp("A peer to keep connected to (repeatable).", valueName: "host:port"))
    var peers: [String] = []

    @Option(
        name: .customLong("allow"),
        help: ArgumentHelp(
            "An identity to let in for pairing besides our own and group members (repeatable).", valueName: "identity"))
    var allow: [String] = []

    @Option(
        name: .customLong("relay-via"),
        help: ArgumentHelp(
            "Reach the relay with this key at this address instead of the one its groups name (repeatable).",
            valueName: "key=host:port"))
    var relayVia: [String] = []

    @Option(help: ArgumentHelp("Network id: nodes with different ids cannot connect (default: none).", valueName: "id"))
    var network: String?

    @Option(help: ArgumentHelp("Configuration file.", valueName: "file"))
    var config: String?

    @Flag(help: "Neither advertise nor browse on the LAN (DNS-SD/mDNS); only static peers and inbound connections.")
    var noDiscovery = false

    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel: String?

    @Option(
        help: ArgumentHelp(
            "The most MB of blobs fetched from peers to keep; over it the least recently used are evicted and fetched again when read (default 16384).",
            valueName: "MB"))
    var blobCache: UInt64?

    @Option(
        help: ArgumentHelp(
            "Hours a blob no value references is kept before it is deleted (default 24).", valueName: "hours"))
    var blobGrace: UInt64?

    @OptionGroup var capture: DaemonCaptureOptions

    @OptionGroup var httpOptions: HTTPOptions

    func run() async throws {
        var options = try NetworkOptions.daemon(home: home.path, file: config)
        if let listen { options.listen = listen == "none" ? nil : try PeerAddress(parsing: listen, listening: true) }
        options.peers += try peers.map { try PeerAddress(parsing: $0) }
        for text in allow { options.allow.insert(try parseIdentity(text)) }
        for text in relayVia {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let key = try? DeviceID(string: parts[0]) else {
                throw CLIError("--relay-via must be KEY=HOST:PORT with the relay's key, not \"\(text)\"")
            }
            options.relayAddresses[key] = try PeerAddress(parsing: parts[1])
        }
        if let network { options.networkID = network }
        if noDiscovery { options.discovery = false }
        if let blobCache {
            guard blobCache <= 1 << 40 else { throw CLIError("--blob-cache is at most \(1 << 40) MB") }
            options.blobCacheBytes = blobCache * 1_000_000
        }
        if let blobGrace {
            guard blobGrace <= 24 * 365 else { throw CLIError("--blob-grace is at most \(24 * 365) hours") }
            options.blobGrace = .seconds(blobGrace * 3_600)
        }
        if let logLevel {
            options.logLevel = try NodeConfiguration.logLevel(
                named: logLevel, setting: "--log-level", failure: { CLIError($0) })
        }
        let page = try httpOptions.prepare(program: "peerlog daemon")
        options.metrics = page?.metrics.node
        bootstrapLogging(level: options.logLevel)
        try home.requireIdentity(initCommand: "peerlog init")
        // The daemon is the library's node (Peerlog.service) with signals and a printed address.
        let service: PeerlogService
        do {
            let peerlog = try await Peerlog.open(home: home.path, create: false)
            let device = peerlog.deviceID
            service = try peerlog.service(options) { address in
                defer { page?.nodeIsListening() }
                // One parseable line on stdout: scripts and tests wait for it.
                FileHandle.standardOutput.write(
                    Data("peerlog daemon: device \(device) listening on \(address?.description ?? "none")\n".utf8))
            }
        } catch {
            throw CLIError("cannot open the node in \(home.path): \(error)")
        }
        try capture.start(on: service)
        try await StatusPageSetup.run(
            [.init(service: service)], page: page.map { ($0, service.node) }, logger: Logger(label: "peerlog"))
    }
}

/// `--capture FILE` and its settings: the daemon records from its start.
struct DaemonCaptureOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Record every decrypted message in and out to this pcapng file (docs/TOOLS.md).", valueName: "file"))
    var capture: String?

    @Option(
        help: ArgumentHelp("With --capture: start FILE.1, FILE.2, … when a file reaches this size.", valueName: "bytes")
    )
    var captureMaxBytes: Int?

    @Flag(help: "With --capture: leave receipt bodies out of the capture.")
    var captureOmitBodies = false

    /// Starts the capture on `service` when `--capture` was given (with the warning).
    func start(on service: PeerlogService) throws {
        guard let capture else { return }
        printError(captureWarning)
        try service.startCapture(path: absolutePath(capture), maxBytes: captureMaxBytes, omitBodies: captureOmitBodies)
    }
}

/// `peerlog status`: asks the running daemon.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the running daemon's peers, connections and per-group sync state.")

    @OptionGroup var home: HomeOptions

    @Flag(help: "Print the status document as JSON.")
    var json = false

    @Option(help: ArgumentHelp("Control socket (default: HOME/peerlog.sock).", valueName: "path"))
    var control: String?

    @Flag(help: "Keep showing the status, with progress of catch-ups (Ctrl-C to stop).")
    var watch = false

    @Option(help: ArgumentHelp("Seconds between updates with --watch.", valueName: "s"))
    var interval: Double = 1

    @Option(help: ArgumentHelp("Stop --watch after this many updates.", valueName: "n"))
    var count: Int?

    func run() throws {
        let daemon = PeerlogDaemon(home: home.path, controlSocket: control)
        if watch {
            try StatusWatch(daemon: daemon, interval: interval, count: count).run()
        } else if json {
            print(try daemon.statusDocument(), terminator: "")
        } else {
            print(StatusText.render(try daemon.status()), terminator: "")
        }
    }
}
