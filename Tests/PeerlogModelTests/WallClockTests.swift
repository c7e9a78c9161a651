import PeerlogModel
import Testing

/// The one ISO 8601 formatter (revocation reasons, the CLI's times): epoch, leap days, the
/// last millisecond of a year, and a far date.
struct WallClockTests {
    @Test func iso8601AtItsEdges() {
        #expect(WallClock.iso8601(millis: 0) == "1970-01-01T00:00:00.000Z")
        #expect(WallClock.iso8601(millis: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(WallClock.iso8601(millis: 1_709_251_199_999) == "2024-02-29T23:59:59.999Z")
        #expect(WallClock.iso8601(millis: 1_735_689_599_999) == "2024-12-31T23:59:59.999Z")
        #expect(WallClock.iso8601(millis: 4_102_444_800_001) == "2100-01-01T00:00:00.001Z")
    }
}
