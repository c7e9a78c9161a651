import Foundation
import PeerlogDiscovery
import PeerlogTestSupport
import Testing

/// Sets what `Discovery` would set on first use (it silences avahi's compatibility warning with
/// setenv), under the lock process launches take: setenv racing `Process.run()` crashed the run.
private func quietAvahi() {
    TestSupport.withEnvironmentLocked { _ = setenv("AVAHI_COMPAT_NOWARN", "1", 0) }
}

private let inNamespace = ProcessInfo.processInfo.environment["PEERLOG_DISCOVERY_NS"] != nil

@Suite struct DiscoveryTests {
    /// libdbus reads DBUS_SYSTEM_BUS_ADDRESS once per process, on first use: this test must be
    /// the process's first D-Bus user, so it cannot share a process with the live-avahi test.
    @Test(.disabled(if: inNamespace, "libdbus keeps the first bus address; run outside the namespace"))
    func reportsUnavailableOnceAndStopsPromptly() throws {
        quietAvahi()
        let saved = TestSupport.withEnvironmentLocked {
            defer { setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/peerlog-test/bus", 1) }
            return ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"]
        }
        defer {
            TestSupport.withEnvironmentLocked {
                if let saved {
                    _ = setenv("DBUS_SYSTEM_BUS_ADDRESS", saved, 1)
                } else {
                    _ = unsetenv("DBUS_SYSTEM_BUS_ADDRESS")
                }
            }
        }

        let log = EventLog()
        let discovery = Discovery(
            advertise: ServiceAdvertisement(name: "x", port: 1, txt: [:]), browse: true, handler: log.handler)
        discovery.start()
        discovery.start()  // no-op while running
        let message = log.wait(timeout: 10) { if case .unavailable(let m) = $0 { m } else { nil } }
        #expect(message?.contains("avahi-daemon") == true)
        usleep(300_000)
        #expect(log.all.count == 1)
        // stop() interrupts the 10 s retry wait.
        let began = Date()
        discovery.stop()
        discovery.stop()
        #expect(Date().timeIntervalSince(began) < 8, "well under the 10 s wait, with room for a busy machine")
    }

    /// Needs a live avahi: tools/test.sh runs it inside host 1 of a namespace LAN
    /// (`tools/lan.sh exec 1 -- env PEERLOG_DISCOVERY_NS=1 swift test --filter …`).
    @Test(
        .enabled(
            if: inNamespace,
            "needs avahi in a namespace: tools/test.sh runs it with tools/lan.sh exec 1"))
    func registersFindsAndLoses() throws {
        let name = "peerlog-test-\(getpid())"
        let txt = PeerlogDNSSD.txt(device: "dev=1", identity: "id-1", network: "")
        let advertiserLog = EventLog()
        let browserLog = EventLog()
        quietAvahi()
        let advertiser = Discovery(
            advertise: ServiceAdvertisement(name: name, port: 4242, txt: txt), browse: false,
            handler: advertiserLog.handler)
        let browser = Discovery(advertise: nil, browse: true, handler: browserLog.handler)
        defer {
            advertiser.stop()
            browser.stop()
        }
        browser.start()
        advertiser.start()

        let registered = advertiserLog.wait(timeout: 10) { if case .registered(let n) = $0 { n } else { nil } }
        #expect(registered == name)
        let found = try #require(
            browserLog.wait(timeout: 10) { if case .found(let s) = $0, s.name == name { s } else { nil } })
        #expect(found.port == 4242)
        #expect(found.txt == txt)
        #expect(!found.addresses.isEmpty)
        #expect(found.addresses.allSatisfy { $0.split(separator: ".").count == 4 })
        #expect(found.host.hasSuffix(".local"))

        advertiser.stop()
        let lost = browserLog.wait(timeout: 10) { $0 == .lost(name: name) ? true : nil }
        #expect(lost == true)
    }
}
