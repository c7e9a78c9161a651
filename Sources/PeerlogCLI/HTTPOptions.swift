import ArgumentParser
import Foundation
import Logging
import PeerlogNode
import PeerlogStatusServer

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

    /// The server for `node`, printing `PROGRAM: status page on http://HOST:PORT/` once bound
    /// (scripts and tests wait for that line).
    static func server(
        _ settings: (PeerAddress, HTTPAccess), node: PeerlogNode, metrics: StatusMetrics,
        program: String, startAfter: AsyncStream<Void>, logger: Logger
    ) -> StatusServer {
        StatusServer(
            address: settings.0, access: settings.1, node: node, metrics: metrics, startAfter: startAfter,
            logger: logger
        ) { bound in
            let hint = settings.1.token == nil ? "" : " (with ?token=…)"
            FileHandle.standardOutput.write(Data("\(program): status page on http://\(bound)/\(hint)\n".utf8))
        }
    }
}
