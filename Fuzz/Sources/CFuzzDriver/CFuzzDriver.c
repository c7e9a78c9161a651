// Header-only target: the symbol comes from libFuzzer at link time.
