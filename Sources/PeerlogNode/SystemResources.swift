import Dispatch
import Glibc
import Synchronization

/// The process's file descriptor limit, raised to what the system allows.
enum FileDescriptorLimit {
    /// Raises the soft RLIMIT_NOFILE to the hard limit (a daemon holds a descriptor per peer
    /// and per handshake; the usual soft default of 1024 is a distribution habit, not a
    /// budget) and returns the soft limit now in force.
    static func raiseToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY (all ones) clamps to Int.max
    }
}

/// glibc keeps freed heap memory in its arenas (and raises its mmap threshold after large
/// frees), so memory of closed connections' partial messages would stay resident. After a
/// large free, one trim runs shortly after; frees in between share it.
enum MemoryTrim {
    private static let scheduled = Atomic<Bool>(false)
    /// glibc's malloc_trim, which its Swift module map does not export; nil on other C libraries.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = dlsym(nil, "malloc_trim").map {
        unsafeBitCast($0, to: (@convention(c) (Int) -> Int32).self)
    }

    static func soon() {
        guard mallocTrim != nil, !scheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(200)) {
            scheduled.store(false, ordering: .releasing)
            _ = mallocTrim?(0)
        }
    }
}
