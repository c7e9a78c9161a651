import Foundation
import PeerlogEngine

/// Issue 19: what `--http` costs. For each log size: the time of one `/metrics` and one
/// `/api/status` request on a daemon holding that log (it must not grow with the log); at
/// `catchUpAt`, a fresh daemon's catch-up without `--http` and then with it, a page following
/// `/events` and `/metrics` scraped every second throughout (it must cost the sync little).
func statusPageBench(counts: [Int], catchUpAt: Int?) throws {
    var scrapes: [(count: Int, metrics: Double, status: Double)] = []
    for count in counts {
        print("\n\(format(Double(count))) committed receipts")
        let dir = NSTemporaryDirectory() + "peerlog-statuspage-\(getpid())-\(count)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let f = try CatchUpFixture(count: count)
        _ = try f.makeHomes(in: dir)
        let sourcePort = freeLoopbackPort()
        let sourceDaemon = try BenchDaemon(home: dir + "/source", ["--http", "127.0.0.1:\(sourcePort)"])
        defer { sourceDaemon.stop() }
        try waitForHTTP(port: sourcePort)

        let metrics = try median((0..<21).map { _ in try timed { _ = try httpGet(port: sourcePort, "/metrics") } })
        let status = try median((0..<21).map { _ in try timed { _ = try httpGet(port: sourcePort, "/api/status") } })
        figure("  GET /metrics on it (median of 21)", String(format: "%.2f ms", metrics * 1000))
        figure("  GET /api/status on it (median of 21)", String(format: "%.2f ms", status * 1000))
        scrapes.append((count, metrics, status))

        guard count == catchUpAt else { continue }
        var rates: [Double] = []
        for (home, watched) in [("plain", false), ("watched", true)] {
            try FileManager.default.createDirectory(atPath: dir + "/" + home, withIntermediateDirectories: true)
            try f.receiver.save(home: dir + "/" + home)
            let port = freeLoopbackPort()
            let began = ContinuousClock.now
            let daemon = try BenchDaemon(
                home: dir + "/" + home,
                ["--peer", sourceDaemon.address, "--allow", f.owner.identity.string]
                    + (watched ? ["--http", "127.0.0.1:\(port)"] : []))
            defer { daemon.stop() }
            let page = watched ? try PageWatcher(port: port) : nil
            defer { page?.stop() }
            let target = try Replica(path: dir + "/\(home)/replica.sqlite", device: f.receiver)
            while (try? target.committedSeq(of: f.group)) ?? 0 < UInt64(f.receipts.count) {
                Thread.sleep(forTimeInterval: 0.1)
                guard ContinuousClock.now - began < .seconds(max(600, count / 500)) else {
                    throw BenchError("catch-up stalled")
                }
            }
            let rate = Double(f.receipts.count) / seconds(ContinuousClock.now - began)
            rates.append(rate)
            let events = page?.stop() ?? 0
            figure(
                watched ? "  catch-up, page open + /metrics each second" : "  catch-up, no --http",
                format(rate) + " /s" + (watched ? " (\(events) events)" : ""))
        }
        ratio("  catch-up with the page / without", rates[1] / rates[0], target: 0.9)
    }
    if let first = scrapes.first, let last = scrapes.last, scrapes.count > 1 {
        print("")
        ratio(
            "/metrics time, \(format(Double(last.count))) / \(format(Double(first.count)))",
            last.metrics / first.metrics)
        ratio(
            "/api/status time, \(format(Double(last.count))) / \(format(Double(first.count)))",
            last.status / first.status)
    }
}

private func waitForHTTP(port: Int) throws {
    for _ in 0..<200 {
        if (try? httpGet(port: port, "/api/status")) != nil { return }
        Thread.sleep(forTimeInterval: 0.05)
    }
    throw BenchError("the status server on port \(port) never answered")
}

/// One GET with `Connection: close`; the whole answer (throws unless 200).
private func httpGet(port: Int, _ path: String) throws -> [UInt8] {
    let socket = try BlockingSocket.connect(port: port)
    defer { socket.close() }
    try socket.write(Array("GET \(path) HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".utf8))
    var answer: [UInt8] = []
    while true {
        let chunk = try socket.read()
        if chunk.isEmpty { break }
        answer += chunk
    }
    guard answer.starts(with: Array("HTTP/1.1 200".utf8)) else { throw BenchError("GET \(path): not 200") }
    return answer
}

private func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

/// A page left open: one thread reads `/events`, another scrapes `/metrics` every second.
private final class PageWatcher: @unchecked Sendable {
    private let socket: BlockingSocket
    private let lock = NSLock()
    private var events = 0
    private var running = true

    init(port: Int) throws {
        try waitForHTTP(port: port)
        socket = try BlockingSocket.connect(port: port)
        try socket.write(Array("GET /events HTTP/1.1\r\nHost: bench\r\n\r\n".utf8))
        Thread.detachNewThread { [self] in
            while let chunk = try? socket.read(), !chunk.isEmpty {
                let n = String(decoding: chunk, as: UTF8.self).components(separatedBy: "event: status").count - 1
                lock.withLock { events += n }
            }
        }
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                _ = try? httpGet(port: port, "/metrics")
                Thread.sleep(forTimeInterval: 1)
            }
        }
    }

    /// Stops scraping, closes the stream; the events read.
    @discardableResult
    func stop() -> Int {
        lock.withLock {
            if running { shutdown(socket.fd, Int32(SHUT_RDWR)) }
            running = false
            return events
        }
    }
}
