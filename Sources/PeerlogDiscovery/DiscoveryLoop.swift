// The body of Discovery's thread: connect, run, and on failure report and retry.
import CDNSSD

final class DiscoveryLoop: @unchecked Sendable {
    static let retryMilliseconds: Int32 = 10_000
    static let pollMilliseconds: Int32 = 500

    private let advertise: ServiceAdvertisement?
    private let browse: Bool
    private let type: String
    private let emit: @Sendable (DiscoveryEvent) -> Void
    private let control: LoopControl

    init(
        advertise: ServiceAdvertisement?, browse: Bool, type: String,
        emit: @escaping @Sendable (DiscoveryEvent) -> Void, control: LoopControl
    ) {
        self.advertise = advertise
        self.browse = browse
        self.type = type
        self.emit = emit
        self.control = control
    }

    func run() {
        defer { control.markFinished() }
        var inOutage = false
        while !control.stopRequested {
            let session = DNSSDSession(type: type, emit: emit)
            var failure = session.setUp(advertise: advertise, browse: browse)
            if failure == nil {
                inOutage = false
                while !control.stopRequested, session.failure == nil {
                    session.iterate(wakeFD: control.wakeRead, timeoutMilliseconds: Self.pollMilliseconds)
                    control.drain()
                }
                failure = session.failure
            }
            // A lost daemon connection invalidates what we found; a requested stop does not.
            session.tearDown(reportLost: failure != nil)
            guard let failure, !control.stopRequested else { break }
            if !inOutage {
                inOutage = true
                emit(.unavailable("mDNS daemon not reachable (is avahi-daemon running?): \(Self.describe(failure))"))
            }
            control.sleep(milliseconds: Self.retryMilliseconds)
        }
    }

    static func describe(_ error: DNSServiceErrorType) -> String {
        let names: [Int: String] = [
            kDNSServiceErr_Unknown: "unknown", kDNSServiceErr_NoMemory: "no memory",
            kDNSServiceErr_BadParam: "bad parameter",
            kDNSServiceErr_BadState: "bad state", kDNSServiceErr_NotInitialized: "not initialized",
            kDNSServiceErr_NameConflict: "name conflict", kDNSServiceErr_Refused: "refused",
        ]
        return "DNS-SD error \(error)" + (names[Int(error)].map { " (\($0))" } ?? "")
    }
}
