import ArgumentParser

/// `--json`: print a JSON document instead of the human form.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON.") var json = false
}
