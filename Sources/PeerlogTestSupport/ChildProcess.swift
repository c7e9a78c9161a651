import Foundation
import Synchronization

/// A child process for the tests, started with posix_spawn and reaped with waitpid (no
/// Foundation `Process`: on this toolchain its launch reads /proc/self/fd past glibc's buffer
/// now and then, swift-corelibs-foundation#5472, and it was seen never to notice a child's exit).
///
/// Every child starts with **an empty signal mask and default dispositions**, whatever the
/// spawning thread blocks or ignores (a test process's threads were seen with SIGINT, SIGTERM,
/// SIGHUP and SIGQUIT blocked, which children inherited: SIGTERM could not stop them). It stays in
/// the test process's group, so whatever stops the test run stops it too. Each child has a hard
/// deadline (`lifetime`); a watchdog kills any child past it, so no test waits forever on a
/// child that never ends.
public final class ChildProcess: Sendable {
    /// The process id.
    public let pid: pid_t
    /// The write end of its standard input when started with `pipeInput` (close it to send EOF).
    public let input: FileHandle?
    /// The exit status once reaped, and whether a signal ended it.
    private let state = Mutex<(exitStatus: Int32?, signalled: Bool)>((nil, false))

    /// Starts `executable` with `arguments` (argv[0] is the executable), `environment` (the
    /// whole environment; nil: this process's), standard input from `stdin` (nil: /dev/null)
    /// and output appended to the files `stdout` and `stderr` (nil: /dev/null; the same path for
    /// both shares one file). With `pipeInput`, its standard input is a pipe written through
    /// `input` instead. Killed once it has run `lifetime` seconds.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: String? = nil,
        pipeInput: Bool = false, stdout: String? = nil, stderr: String? = nil, lifetime: TimeInterval = 900
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeEnds: [Int32] = [-1, -1]
        if pipeInput {
            guard pipe(&pipeEnds) == 0 else {
                throw TestSupport.ProcessError(description: "pipe: \(String(cString: strerror(errno)))")
            }
            // The child gets the read end as 0 and neither original descriptor.
            _ = fcntl(pipeEnds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(pipeEnds[1], F_SETFD, FD_CLOEXEC)
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, stdin ?? "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        if let stderr, stderr == stdout {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        }
        // Nothing else of the test process's: descriptors it opened without close-on-exec (a
        // pipe's write end held by a daemon would keep a reader from ever seeing EOF).
        _ = spawnCloseFrom(&actions, 3)
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attr, &none)
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let env = TestSupport.withEnvironmentLocked {
            (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        }
        defer { for e in env { free(e) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attr, argv, env)
        if pipeInput { close(pipeEnds[0]) }
        guard rc == 0 else {
            if pipeInput { close(pipeEnds[1]) }
            throw TestSupport.ProcessError(description: "cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
        input = pipeInput ? FileHandle(fileDescriptor: pipeEnds[1], closeOnDealloc: true) : nil
        ChildProcess.watchdog.add(self, deadline: Date().addingTimeInterval(lifetime))
    }

    /// Whether it has not exited yet (reaps it when it has).
    public var isRunning: Bool { poll() == nil }

    /// The exit status once it has exited: the exit code, or the number of the signal that ended
    /// it (`endedBySignal`), as Foundation's `terminationStatus` has it.
    public var status: Int32? { poll() }

    /// Whether a signal ended it.
    public var endedBySignal: Bool {
        _ = poll()
        return state.withLock { $0.signalled }
    }

    private func poll() -> Int32? {
        state.withLock { state in
            if let exitStatus = state.exitStatus { return exitStatus }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
            let signal = raw & 0x7f
            state.signalled = signal != 0
            state.exitStatus = signal == 0 ? (raw >> 8) & 0xff : signal
            ChildProcess.watchdog.remove(pid)
            return state.exitStatus
        }
    }

    /// Sends `signal` (nothing once it has exited).
    public func signal(_ signal: Int32) {
        guard isRunning else { return }
        kill(pid, signal)
    }

    /// Waits up to `timeout` seconds for it to exit; then SIGKILLs it and reaps it.
    /// Returns the exit status.
    @discardableResult
    public func wait(timeout: TimeInterval) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning && Date() < deadline { usleep(5_000) }
        return kill9()
    }

    /// SIGTERM, then SIGKILL if it has not exited within `grace`. Returns the status.
    @discardableResult
    public func stop(grace: TimeInterval = 10) -> Int32 {
        signal(SIGTERM)
        return wait(timeout: grace)
    }

    /// SIGKILL (if still running) and reaps it. Returns the status.
    @discardableResult
    public func kill9() -> Int32 {
        if isRunning { kill(pid, SIGKILL) }
        while true {
            if let s = status { return s }
            usleep(1_000)
        }
    }

    deinit {
        if poll() == nil {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            _ = waitpid(pid, &raw, 0)
            ChildProcess.watchdog.remove(pid)
        }
    }

    /// Kills children past their deadline, once a second (a reaped child is forgotten first, so
    /// a reused pid is never signalled).
    static let watchdog = Watchdog()

    final class Watchdog: Sendable {
        private let state = Mutex<(deadlines: [pid_t: Date], started: Bool)>(([:], false))

        func add(_ child: ChildProcess, deadline: Date) {
            let start = state.withLock { state in
                state.deadlines[child.pid] = deadline
                defer { state.started = true }
                return !state.started
            }
            guard start else { return }
            Thread.detachNewThread { [self] in
                while true {
                    sleep(1)
                    let now = Date()
                    let due = state.withLock { $0.deadlines.filter { $0.value < now }.map(\.key) }
                    for pid in due { kill(pid, SIGKILL) }
                }
            }
        }

        func remove(_ pid: pid_t) { state.withLock { _ = $0.deadlines.removeValue(forKey: pid) } }
    }
}

/// glibc's posix_spawn_file_actions_addclosefrom_np (2.34 and later; Debian 12 has 2.36), which
/// its headers declare only under _GNU_SOURCE.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func spawnCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
