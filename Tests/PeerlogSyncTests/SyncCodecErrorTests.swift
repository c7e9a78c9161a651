import PeerlogEncoding
import PeerlogSync
import Testing

/// SyncCodecError: a code (with the wire's name for it), equality on the code only, and a
/// description that names the limit, never the refused text.
@Suite struct SyncCodecErrorTests {
    @Test func aRefusedMessageSaysWhichLimitNotWhatItHeld() {
        let long = "s3cret " + String(repeating: "x", count: 2_000)
        do {
            _ = try SyncMessage.decode(SyncMessage.error(code: "limit", message: long).encoded(), limits: SyncLimits())
            Issue.record("accepted an over-long error message")
        } catch {
            #expect(error.code == .limit && error.code.wireName == "limit", "\(error)")
            #expect("\(error)".hasPrefix("limit: maxErrorMessageBytes") && !"\(error)".contains("s3cret"), "\(error)")
            #expect(error.file.hasPrefix("PeerlogSync/"))
        }
        do {
            _ = try SyncMessage.decode(CBOREncoder.encode(.array([])), limits: SyncLimits())
            Issue.record("accepted an array")
        } catch {
            #expect(
                error.code == .malformed && error.code.wireName == "malformed"
                    && error != SyncCodecError.Code.limit.asError)
        }
    }
}

extension SyncCodecError.Code {
    /// Any error with this code (equality is on the code only).
    var asError: SyncCodecError? {
        do {
            _ = try SyncMessage.decode(
                [UInt8](repeating: 0, count: SyncLimits().maxMessageBytes + 1), limits: SyncLimits())
        } catch {
            return self == .limit ? error : nil
        }
        return nil
    }
}
