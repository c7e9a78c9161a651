import PeerlogFuzzHarness

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrames(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    FuzzHarness.frames(Array(UnsafeRawBufferPointer(start: start, count: count)))
    return 0
}
