import Logging
import NIOCore
import NIOPosix
import PeerlogChannel
import PeerlogModel

/// Keeps one static peer connected: dial, wait for the connection to end, back off, redial.
final class Dialer: Sendable {
    let address: PeerAddress
    private let state = LockedValue(PeerStatus(address: "", state: "connecting", direction: "outbound", source: "static"))
    private let device = LockedValue<DeviceID?>(nil)
    private let retryAt = LockedValue<UInt64?>(nil)

    /// `expectedDevice`: known in advance for discovered peers, so the dialer waits while that
    /// device is connected some other way (its own dial, a static peer).
    init(address: PeerAddress, source: String = "static", expectedDevice: DeviceID? = nil) {
        self.address = address
        state.value.address = address.description
        state.value.source = source
        device.value = expectedDevice
    }

    var status: PeerStatus {
        var s = state.value
        if s.state == "backoff", let at = retryAt.value {
            let now = WallClock.nowMillis()
            s.retryInMs = at > now ? at - now : 0
        }
        return s
    }

    /// Runs until cancelled.
    func run(hub: NodeHub, connect: @escaping @Sendable (PeerAddress, @escaping @Sendable (DeviceCertificate) -> Void, @escaping @Sendable (String) -> Void) async throws -> Channel, logger: Logger) async {
        var backoff = Backoff()
        while !Task.isCancelled {
            if let known = device.value, hub.isConnected(device: known) {
                // Connected through the peer's own dial (the tie-break kept that one).
                state.value.state = "connected"
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            state.value.state = "connecting"
            let established = LockedValue(false)
            let closeReason = LockedValue<String?>(nil)
            do {
                let channel = try await connect(address, { [state, device] certificate in
                    established.value = true
                    device.value = certificate.device
                    state.value.state = "connected"
                    state.value.device = certificate.device.string
                    state.value.name = certificate.name
                    state.value.connectedSince = WallClock.nowMillis()
                    state.value.lastError = nil
                }, { reason in closeReason.value = reason })
                try await channel.closeFuture.get()
            } catch {
                closeReason.value = "cannot connect: \(error)"
            }
            if established.value { backoff.reset() }
            state.value.connectedSince = nil
            if let reason = closeReason.value, !established.value || !reason.contains("tie-break") {
                state.value.lastError = reason
            }
            let delay = backoff.nextDelay()
            let ms = UInt64(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)
            retryAt.value = WallClock.nowMillis() + ms
            state.value.state = "backoff"
            if !established.value { logger.info("peer \(address): \(closeReason.value ?? "closed"); retrying in \(ms) ms") }
            try? await Task.sleep(for: delay)
        }
    }
}
