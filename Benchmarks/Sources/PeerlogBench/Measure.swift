import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel

nonisolated(unsafe) var secondsPerFigure = 1.0

/// Runs `body` in batches until `secondsPerFigure` have passed; returns operations per second.
func rate(_ name: String, batch: Int = 200, _ body: (Int) throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    try body(0)  // warm-up
    var ops = 0
    let start = clock.now
    var elapsed = Duration.zero
    repeat {
        for i in 0..<batch { try body(ops + i) }
        ops += batch
        elapsed = clock.now - start
    } while elapsed < .milliseconds(Int(secondsPerFigure * 1000))
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let r = Double(ops) / seconds
    print(pad(name, 46) + pad(format(r) + " /s", 16, left: false))
    return r
}

func format(_ v: Double) -> String {
    let i = Int(v.rounded())
    var s = String(i)
    var out = ""
    while s.count > 3 {
        out = "," + s.suffix(3) + out
        s.removeLast(3)
    }
    return s + out
}

func pad(_ s: String, _ n: Int, left: Bool = true) -> String {
    let fill = String(repeating: " ", count: max(0, n - s.count))
    return left ? s + fill : fill + s
}

func ratio(_ name: String, _ value: Double, target: Double? = nil) {
    let shown = (value * 100).rounded() / 100
    print(
        pad(name, 46) + pad(String(shown), 16, left: false)
            + (target.map { value >= $0 ? "   (target ≥ \($0): met)" : "   (target ≥ \($0): NOT met)" } ?? ""))
}

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

/// Times one run of `body`, in seconds.
func timed(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    return seconds(clock.now - start)
}

/// Prints one figure, flushed: a long run shows its figures as they come, even into a pipe.
func figure(_ name: String, _ value: String) {
    print(pad(name, 46) + pad(value, 16, left: false))
    fflush(nil)
}

/// Resident memory of this process, from /proc/self/status (Linux), in MiB.
func residentMiB() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kb = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kb / 1024
}

/// CPU seconds (user + system) used so far by this process (`RUSAGE_SELF`) or by its children
/// that have been waited for (`RUSAGE_CHILDREN`).
func cpuSeconds(_ who: __rusage_who = RUSAGE_SELF) -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(who.rawValue), &usage)
    func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return s(usage.ru_utime) + s(usage.ru_stime)
}
