import Foundation

/// Samples another process's resident memory from /proc/PID/status (Linux) on a thread of
/// its own: `VmRSS` now and then, and the kernel's own peak `VmHWM`, which no sampling misses.
final class ProcessMemory: @unchecked Sendable {
    let pid: Int32
    private let lock = NSLock()
    private var maxSampled = 0
    private var lastHWM = 0
    private var running = true
    private var thread: Thread?

    init(pid: Int32, every interval: TimeInterval = 0.1) {
        self.pid = pid
        let t = Thread { [weak self] in
            while let self, self.isRunning {
                self.sample()
                Thread.sleep(forTimeInterval: interval)
            }
        }
        thread = t
        t.start()
    }

    private var isRunning: Bool { lock.withLock { running } }

    private func sample() {
        let status = Self.status(pid)
        lock.withLock {
            if let rss = status["VmRSS"] { maxSampled = max(maxSampled, rss) }
            if let hwm = status["VmHWM"] { lastHWM = max(lastHWM, hwm) }
        }
    }

    /// Resident bytes now (0 if the process is gone).
    var current: Int { Self.status(pid)["VmRSS"] ?? 0 }

    /// The peak so far: the kernel's high-water mark, or the largest sample if that is unreadable.
    var peak: Int {
        sample()
        return lock.withLock { max(lastHWM, maxSampled) }
    }

    /// The largest `VmRSS` sampled since this sampler started (the high-water mark may be older).
    var sampledPeak: Int { lock.withLock { maxSampled } }

    func stop() { lock.withLock { running = false } }

    /// The "kB" fields of /proc/PID/status, in bytes.
    static func status(_ pid: Int32) -> [String: Int] {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return [:] }
        var out = [String: Int]()
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let value = parts[1].split(whereSeparator: { $0 == " " || $0 == "\t" })
            if value.count == 2, value[1] == "kB", let kb = Int(value[0]) { out[String(parts[0])] = kb * 1024 }
        }
        return out
    }
}

func mebibytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
