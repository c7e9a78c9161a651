#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Milliseconds since the Unix epoch. The only place the model reads the real clock; pure code takes time as an argument.
public enum WallClock {
    /// The real time (CLOCK_REALTIME) in milliseconds; it jumps when the system clock is set.
    public static func nowMillis() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }

    /// `millis` (since 1970, UTC) as `YYYY-MM-DDThh:mm:ss.sssZ`, computed without Foundation:
    /// the form revocation reasons and the CLI print times in.
    public static func iso8601(millis: UInt64) -> String {
        let seconds = Int64(millis / 1000)
        var days = seconds / 86_400
        let rest = seconds % 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        days += 719_468
        let era = days / 146_097
        let doe = days - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ v: Int64, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(rest / 3600, 2)):\(pad(rest % 3600 / 60, 2)):"
            + "\(pad(rest % 60, 2)).\(pad(Int64(millis % 1000), 3))Z"
    }
}
