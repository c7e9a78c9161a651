// DNS-SD registration and browsing of `_peerlog._tcp` (avahi's compatibility library on Linux).
import Foundation
import Synchronization

/// Advertises one service and/or browses one service type on a dedicated thread.
///
/// The handler runs on that thread, so it should return quickly; it is never called after
/// `stop()` returns (unless `stop()` was called from the handler itself).
package final class Discovery: @unchecked Sendable {
    private let advertise: ServiceAdvertisement?
    private let browse: Bool
    private let type: String
    private let handler: @Sendable (DiscoveryEvent) -> Void
    /// The running loop's control and thread; nil when stopped.
    private let running = Mutex<(control: LoopControl, thread: Thread)?>(nil)

    package init(
        advertise: ServiceAdvertisement?, browse: Bool, type: String = PeerlogDNSSD.type,
        handler: @escaping @Sendable (DiscoveryEvent) -> Void
    ) {
        self.advertise = advertise
        self.browse = browse
        self.type = type
        self.handler = handler
    }

    deinit { stop() }

    /// Starts the loop; a no-op when already running. Never throws: an unreachable daemon is
    /// reported as `.unavailable` and retried every 10 s until `stop()`.
    package func start() {
        Discovery.silenceCompatWarning
        running.withLock { running in
            guard running == nil, let control = LoopControl() else { return }
            let loop = DiscoveryLoop(
                advertise: advertise, browse: browse, type: type, emit: handler, control: control)
            let thread = Thread { loop.run() }
            thread.name = "peerlog-discovery"
            running = (control, thread)
            thread.start()
        }
    }

    /// Deregisters, stops browsing and waits for the thread to finish. Idempotent.
    package func stop() {
        let taken = running.withLock { running in
            defer { running = nil }
            return running
        }
        guard let (control, thread) = taken else { return }
        control.requestStop()
        // From the handler (our own thread) waiting would deadlock: the loop exits on its own.
        if Thread.current !== thread { control.waitUntilFinished() }
    }

    /// avahi's compat layer prints a warning on first use unless this is set; set it once,
    /// before any thread of ours can call into the library.
    private static let silenceCompatWarning: Void = { setenv("AVAHI_COMPAT_NOWARN", "1", 0) }()
}

/// Stop flag, self-pipe (to wake the loop's poll) and completion signal, shared by the
/// caller's thread and the loop thread.
final class LoopControl: @unchecked Sendable {
    let wakeRead: Int32
    private let wakeWrite: Int32
    private let stopped = Mutex(false)
    private let finished = DispatchSemaphore(value: 0)

    init?() {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    var stopRequested: Bool { stopped.withLock { $0 } }

    func requestStop() {
        stopped.withLock { $0 = true }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Sleeps up to `milliseconds`, returning early when a stop is requested.
    func sleep(milliseconds: Int32) {
        var fd = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        if !stopRequested { _ = poll(&fd, 1, milliseconds) }
        drain()
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, buffer.count) > 0 {}
    }

    func markFinished() { finished.signal() }
    func waitUntilFinished() { finished.wait() }
}
