import Foundation
import PeerlogEngine
import PeerlogModel
import PeerlogNode
import PeerlogQuickCalls
import PeerlogStore
import Synchronization

/// A replica opened on a home folder: the one type an app holds.
///
/// The home holds this device's keys (`identity.*`, `device.*`) and its store
/// (`replica.sqlite`), exactly as `peerlog` uses them, so the CLI, the daemon and an app can
/// share a home: writes by any of them reach the others' change streams. Every method is safe
/// to call from any task; reads and writes are short SQLite transactions.
public final class Peerlog: Sendable {
    /// The folder this replica lives in.
    public let home: String
    let replica: Replica
    let device: LocalDevice
    /// Deleted when this instance goes away (`temporary`).
    private let removesHome: Bool
    /// Fired after every write transaction of this process (wakes change streams).
    let signal = AsyncSignal()
    /// The node while `run` runs.
    let running = Mutex<PeerlogNode?>(nil)

    /// The folder `peerlog` uses when given none: `$PEERLOG_HOME`, else
    /// `$XDG_DATA_HOME/peerlog`, else `~/.local/share/peerlog`.
    public static var defaultHome: String { HomeLayout.defaultHome }

    /// Opens the replica in `home` (default: `defaultHome`). With `create` (the default) a
    /// folder without an identity gets a new identity and device, named `deviceName` (default:
    /// the host name); otherwise such a folder is an error.
    ///
    /// Opening a writable home builds the tentative views an older binary left behind (one
    /// fold per such group); `rebuildViews: false` leaves the store exactly as found, for
    /// `check()` to report it.
    public static func open(
        home: String = Peerlog.defaultHome, deviceName: String? = nil, create: Bool = true, rebuildViews: Bool = true
    ) async throws -> Peerlog {
        try await blocking {
            try Peerlog(
                home: home, deviceName: deviceName, create: create, removesHome: false, rebuildViews: rebuildViews)
        }
    }

    /// A replica in a new temporary folder with a new identity, deleted when the instance is
    /// released: for tests and previews.
    public static func temporary(deviceName: String = "preview") async throws -> Peerlog {
        let home = NSTemporaryDirectory() + "peerlog-" + UUID().uuidString
        return try await blocking { try Peerlog(home: home, deviceName: deviceName, create: true, removesHome: true) }
    }

    /// The home for reading only (the CLI's `get`, `log`, `status`…): when its store was never
    /// created, an empty replica in memory stands in, so reading creates no file.
    package static func openForReading(home: String, rebuildViews: Bool = true) async throws -> Peerlog {
        try await blocking {
            try Peerlog(
                home: home, deviceName: nil, create: false, removesHome: false, rebuildViews: rebuildViews,
                readsOnly: true)
        }
    }

    init(
        home: String, deviceName: String?, create: Bool, removesHome: Bool, rebuildViews: Bool = true,
        readsOnly: Bool = false
    ) throws {
        self.home = home
        self.removesHome = removesHome
        let paths = LocalDevice.paths(home: home)
        if !FileManager.default.fileExists(atPath: paths.certificate) {
            guard create else {
                throw PeerlogError(
                    .home,
                    "\(home) has no Peerlog identity (open it with create: true, or run: peerlog init --home \(home))")
            }
            let name = try Peerlog.checkedDeviceName(deviceName)
            do {
                try FileManager.default.createDirectory(
                    atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                let generated = try LocalDevice.generate(name: name, createdAt: WallClock.nowMillis())
                try generated.save(home: home)
            } catch let error as PeerlogError {
                throw error
            } catch {
                throw PeerlogError(.home, "cannot create a Peerlog identity in \(home): \(error)")
            }
        }
        do {
            device = try LocalDevice.load(home: home)
            let path = HomeLayout.store(home)
            replica =
                readsOnly && !FileManager.default.fileExists(atPath: path)
                ? try Replica.empty(device: device)
                : try Replica(path: path, device: device, access: Store.availableAccess(at: path))
        } catch {
            throw PeerlogError(.home, "cannot open the replica in \(home): \(error)")
        }
        // Change rows compare with the overlay: build any overlay an older binary left behind.
        if rebuildViews && replica.store.access == .readWrite { _ = try? replica.buildMissingTentativeViews() }
        replica.subscribe { [signal] _ in signal.fire() }
        // A daemon of this home in another process learns of the write now, not at its next poll.
        if replica.store.access == .readWrite {
            let socketPath = NodeConfiguration().controlSocketPath(home: home)
            replica.afterEachDelivery { [weak self] fromPeer in
                guard !fromPeer, let self, running.withLock({ $0 == nil }) else { return }
                ControlClient.tellWrote(socketPath: socketPath)
            }
        }
    }

    deinit {
        if removesHome { try? FileManager.default.removeItem(atPath: home) }
    }

    /// The person (or app account) this device acts for; what others invite.
    public var identity: IdentityID { device.identity }
    /// This device's key.
    public var deviceID: DeviceID { device.device }
    /// The name other devices see.
    public var deviceName: String { device.certificate.name }

    /// After a write of this app: the node it runs offers it to peers now rather than at its
    /// next poll (one in another process is told by `afterEachDelivery`).
    func offerNow() { running.withLock { $0 }?.offerWrites() }

    /// Where facade calls run their SQLite work: GCD threads, never the cooperative pool that the
    /// app's tasks and the node run on (a blocked cooperative thread is one of two on a 2-core
    /// machine). Concurrent, as the store is: reads run side by side (WAL, a reader pool), and the
    /// store's one writer orders writes, so a read never waits behind a long blob write here.
    private static let work = DispatchQueue(label: "peerlog.facade", qos: .userInitiated, attributes: .concurrent)

    /// Runs `body` on `work` and awaits it, turning lower-level errors into `PeerlogError`s.
    func call<T: Sendable>(
        _ code: PeerlogError.Code = .storage, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await Self.blocking { try Self.mapped(code, body) }
    }

    /// Runs blocking work (SQLite, a control-socket round trip) on `work` and awaits it. `body` (and
    /// the instance it holds) is let go before the caller resumes: a CLI command that returns and
    /// exits must close the store itself, or SQLite leaves its -wal file behind.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let work = WorkItem(body)
        return try await withCheckedThrowingContinuation { done in
            Self.work.async { done.resume(with: work.run()) }
        }
    }

    /// Runs `body`, turning lower-level errors into `PeerlogError`s.
    private static func mapped<T>(_ code: PeerlogError.Code, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as PeerlogError { throw error } catch let error as ReplicaError {
            throw PeerlogError(PeerlogError.Code(engine: error.code), error.description)
        } catch {
            throw PeerlogError(code, "\(error)")
        }
    }
}

/// One piece of blocking work, run once; it drops its closure as it runs.
private final class WorkItem<T: Sendable>: Sendable {
    private let body: Mutex<(@Sendable () throws -> T)?>

    init(_ body: @escaping @Sendable () throws -> T) { self.body = Mutex(body) }

    func run() -> Result<T, any Error> {
        guard let body = body.withLock({ $0.take() }) else { preconditionFailure("a work item runs once") }
        return Result { try body() }
    }
}
