import ArgumentParser
import Foundation
import Logging
import PeerlogNode
import PeerlogStatusServer
import ServiceLifecycle

/// `--http HOST:PORT` and `--http-token TOKEN` of `peerlog daemon` and `peerlog relay run`:
/// the status page, `/api/status` and `/metrics` (docs/TOOLS.md#status-page).
struct HTTPOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Serve the status page, /api/status and /metrics here (off unless given; loopback only without --http-token).",
            valueName: "host:port"))
    var http: String?

    @Option(
        help: ArgumentHelp(
            "Every HTTP request must carry this token (?token= or Authorization: Bearer); needed to bind a non-loopback address. Default: $PEERLOG_HTTP_TOKEN.",
            valueName: "token"))
    var httpToken: String?

    func validate() throws { _ = try validated() }

    /// The checked address and access, or nil without `--http`; usage errors name the option.
    func validated() throws -> (PeerAddress, HTTPAccess)? {
        guard let http else {
            if httpToken != nil { throw ValidationError("--http-token needs --http HOST:PORT") }
            return nil
        }
        let address: PeerAddress
        do { address = try PeerAddress(parsing: http, listening: true) } catch {
            throw ValidationError("--http: \(error)")
        }
        let token =
            httpToken ?? ProcessInfo.processInfo.environment["PEERLOG_HTTP_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        do { return (address, try HTTPAccess(address: address, token: token)) } catch {
            throw ValidationError("\(error)")
        }
    }

    /// What `--http` needs before the node starts: the metrics the node must count into and
    /// the signal that its listener is up; nil without `--http`.
    func prepare(program: String) throws -> StatusPageSetup? {
        try validated().map { StatusPageSetup(address: $0.0, access: $0.1, program: program) }
    }
}

/// The status server of one daemon or relay process, from before its node exists to its run.
struct StatusPageSetup {
    let address: PeerAddress
    let access: HTTPAccess
    let program: String
    /// Give to the node's configuration (`NodeConfiguration.metrics`).
    let metrics = StatusMetrics()
    private let nodeListening: AsyncStream<Void>
    private let listened: AsyncStream<Void>.Continuation

    init(address: PeerAddress, access: HTTPAccess, program: String) {
        self.address = address
        self.access = access
        self.program = program
        (nodeListening, listened) = AsyncStream<Void>.makeStream()
    }

    /// Call from the node's `onListening`: the status server binds after it, so the
    /// "listening on" line stays the first the process prints.
    func nodeIsListening() { listened.yield() }

    /// The server for `node`, printing `PROGRAM: status page on http://HOST:PORT/` once bound.
    func server(node: PeerlogNode, logger: Logger) -> StatusServer {
        let (program, hint) = (program, access.token == nil ? "" : " (with ?token=…)")
        return StatusServer(
            address: address, access: access, node: node, metrics: metrics, startAfter: nodeListening, logger: logger
        ) { bound in
            FileHandle.standardOutput.write(Data("\(program): status page on http://\(bound)/\(hint)\n".utf8))
        }
    }

    /// Runs `services` (and with `page`, its server after them) until SIGTERM or SIGINT; with a
    /// page, one that stopped reading holds the exit up for 10 s at most.
    static func run(
        _ services: [ServiceGroupConfiguration.ServiceConfiguration], page: (StatusPageSetup, PeerlogNode)?,
        logger: Logger
    ) async throws {
        var all = services
        if let (setup, node) = page { all.append(.init(service: setup.server(node: node, logger: logger))) }
        var configuration = ServiceGroupConfiguration(
            services: all, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        if page != nil { configuration.maximumGracefulShutdownDuration = .seconds(10) }
        try await ServiceGroup(configuration: configuration).run()
    }
}
