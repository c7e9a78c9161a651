#if PostgreSQL
import Foundation
import Logging
import PeerlogRelayPostgres
import PeerlogTestSupport
import Testing

/// Issue 18: every operation on the relay's database runs under a deadline, so a database that
/// stopped, or one that accepts and never answers, is reported within seconds, and the store
/// works again once the database is back.
@Suite(.serialized)
struct DeadlineTests {
    static let short = RelayStoreLimits(operation: .seconds(1), connect: .seconds(1))

    /// Times `body`, which must fail with `RelayStoreError` code `timeout` (or, for a connection
    /// whose startup gets no answer within `connectTimeout`, `unreachable`).
    static func timesOut(_ body: () async throws -> Void) async -> Duration {
        let began = ContinuousClock.now
        do {
            try await body()
            Issue.record("it answered")
        } catch let e as RelayStoreError {
            #expect(e.code == .timeout || e.code == .unreachable, "\(e)")
            if e.code == .timeout {
                // The short limit ended it, not the default's 5 s: the error names the limit.
                #expect(
                    "\(e)".contains("no answer within \(short.operationTimeout) (operationTimeout)"), "\(e)")
            }
            #expect(!"\(e)".contains("\n"), "one line: \(e)")
        } catch {
            Issue.record("not a RelayStoreError: \(error)")
        }
        return ContinuousClock.now - began
    }

    /// A loopback port that accepts TCP connections (the kernel completes them in the listen
    /// backlog) and never reads or writes a byte: a server that hangs.
    @Test func aServerThatAcceptsAndNeverAnswersIsReportedAtTheDeadline() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        let url = "postgres://postgres@127.0.0.1:\(silent.port)/peerlog"
        let store = try PostgresRelayStore(url: url, logger: Logger(label: "test"), limits: Self.short)
        let start = await Self.timesOut { try await store.start() }
        // At the 1 s deadline, not before. Which limit ended it is told by the error
        // (`timesOut`), not by the time: a loaded 2-core machine fires a timer seconds late
        // (4.8 s was seen in a full test run). The upper bound only catches a deadline that
        // never fires.
        #expect(start >= .milliseconds(990) && start < .seconds(60), "start() gave up after \(start)")
        try await withRunning([store]) {
            let heads = await Self.timesOut { _ = try await store.heads() }
            #expect(heads >= .milliseconds(990) && heads < .seconds(60), "heads() gave up after \(heads)")
        }
    }
}

/// A listening loopback socket that never accepts.
final class SilentListener: Sendable {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard fd >= 0, bound else { throw TestSupport.ProcessError(description: "cannot listen on loopback") }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    func close() { _ = Glibc.close(fd) }
}
#endif
