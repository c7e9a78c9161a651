import CFuzzDriver
import PeerlogFuzzHarness

/// The executable's entry point (what SwiftPM's `main` calls for this target): hands the
/// arguments to libFuzzer's driver, which runs the input function below on each input.
@_cdecl("FuzzFrames_main")
public func fuzzFramesMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    guard FuzzHarness.hashesAreRight() else { return 1 }
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments, framesTestOneInput)
}

/// libFuzzer's main (linked whole) references this; it is also the per-input entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func framesTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzHarness.frames(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}
