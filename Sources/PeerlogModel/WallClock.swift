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
}
