// The values Discovery takes and reports are plain data, no DNS-SD types, so the node layer
// and its tests never need the C library.

/// What Discovery reports, on its own thread.
public enum DiscoveryEvent: Sendable, Equatable {
    /// Our advertisement is live under this (possibly renamed) instance name.
    case registered(name: String)
    /// A service was resolved, or resolved again with a changed address, port or TXT.
    case found(DiscoveredService)
    /// A previously found service went away (also sent for every found service when the
    /// daemon connection is lost, since nothing is known about them any more).
    case lost(name: String)
    /// The mDNS daemon is not reachable: one clear sentence. Sent once per outage.
    case unavailable(String)
}
