#!/usr/bin/env bash
# Declared dependencies equal the real ones, both ways. Undeclared: every module a target's
# sources import that is a target of the same package (a Peerlog module, CSodium, CDNSSD) or a
# product some target of the package names (GRDB, NIOCore, Logging, ...; in a sibling package
# also the main package's products) must be among that target's dependencies in its
# Package.swift. Unused: every dependency a target declares (by name, .target or .product, a
# trait-conditional one too) must be imported by at least one of that target's .swift files,
# under #if or not; a dependency on an executable target is exempt (a test target declares one
# so that `swift test` builds the binary it runs). Test targets are checked like the others;
# system, binary and plugin targets, and package-level dependencies (swift-docc-plugin), are
# not. The manifest is read through `swift package dump-package`; SDK modules (Foundation,
# Glibc, Testing, ...) are not checked. Arguments: package directories (default: the main
# package, Benchmarks and Fuzz). Exit status 1 lists every undeclared import and every unused
# dependency.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=("$@")
[ ${#packages[@]} -gt 0 ] || packages=(. Benchmarks Fuzz)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for package in "${packages[@]}"; do
  [ -f "$package/Package.swift" ] || continue
  # Its own scratch path: no wait on (or for) a build holding the package's .build lock.
  swift package --package-path "$package" --scratch-path "$scratch/$(basename "$(realpath "$package")")" \
    dump-package > "$scratch/manifest.json"
  python3 - "$package" "$scratch/manifest.json" <<'PY' || status=1
import json, os, re, sys

package, manifest = sys.argv[1], json.load(open(sys.argv[2]))
targets = manifest["targets"]
local = {t["name"] for t in targets}
executables = {t["name"] for t in targets if t["type"] == "executable"}
# The modules a product gives its dependents, where that is not just the module of its own
# name. swift-metrics' product Metrics is module Metrics, which re-exports CoreMetrics
# (`@_exported import CoreMetrics`); PeerlogNode declares Metrics and imports CoreMetrics.
# Every other product named here (Crypto, GRDB, NIOCore, NIOPosix, NIOEmbedded, Logging,
# ServiceLifecycle, ArgumentParser, Hummingbird, HummingbirdCore, Metrics, MetricsTestKit,
# Prometheus, PostgresNIO, and the main package's products in Benchmarks and Fuzz) is one
# module of the product's name.
PRODUCT_MODULES = {"Metrics": {"Metrics", "CoreMetrics"}}

def modules_of(name):
    return PRODUCT_MODULES.get(name, {name}) if name not in local else {name}

products = set()
for t in targets:
    for dep in t["dependencies"]:
        if "product" in dep:
            products.add(dep["product"][0])
checked = set(local)
for product in products:
    checked |= modules_of(product)

def default_path(t):
    if t.get("path"):
        return t["path"]
    return ("Tests/" if t["type"] == "test" else "Sources/") + t["name"]

# Any import declaration: attributes (@_exported, @testable, @preconcurrency, @_spi(X),
# @_implementationOnly, ...), an access level (public/package/internal/... import), a kind
# (import struct X.Y); group 1 is the top-level module (X of X.Y).
statement = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?"
                       r"import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_]\w*)")
problems = {}  # (target, module) -> the first import's file:line
unused = []  # (target, dependency)
for t in targets:
    if t["type"] in ("system", "binary", "plugin"):
        continue
    declared = []  # dependency names, in manifest order
    for dep in t["dependencies"]:
        for kind in ("byName", "target", "product"):
            if kind in dep:
                declared.append(dep[kind][0])
    provided = set()
    for name in declared:
        provided |= modules_of(name)
    imported = set()
    root = os.path.join(package, default_path(t))
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(directory, name)
            for n, line in enumerate(open(path, encoding="utf-8"), 1):
                m = statement.match(line)
                if not m:
                    continue
                imported.add(m.group(1))
                if m.group(1) in checked and m.group(1) != t["name"] and m.group(1) not in provided:
                    problems.setdefault((t["name"], m.group(1)), f"{os.path.normpath(path)}:{n}")
    for name in dict.fromkeys(declared):
        if name in executables:
            continue
        if not modules_of(name) & imported:
            unused.append((t["name"], name))
for (target, module), first in sorted(problems.items()):
    print(f"{first}: target {target} imports {module}, which its dependencies in Package.swift do not list")
for target, dependency in unused:
    print(f"check_imports: {package}: target {target} declares {dependency} but no source imports it")
if problems or unused:
    print(f"check_imports: {len(problems)} undeclared import(s), {len(unused)} unused dependency(ies)"
          f" in {package}/Package.swift", file=sys.stderr)
    sys.exit(1)
print(f"check_imports: every import of {package}/Package.swift's targets is declared, every declared dependency imported")
PY
done
exit $status
