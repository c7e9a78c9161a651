import CFuzzDriver
import PeerlogFuzzHarness

/// The executable's entry point (what SwiftPM's `main` calls for this target): hands the
/// arguments to libFuzzer's driver, which runs the input function below on each input.
@_cdecl("FuzzPairingMessages_main")
public func fuzzPairingMessagesMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32
{
    guard FuzzHarness.hashesAreRight() else { return 1 }
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments, pairingMessageTestOneInput)
}

/// libFuzzer's main (linked whole) references this; it is also the per-input entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func pairingMessageTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzHarness.pairingMessage(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}
