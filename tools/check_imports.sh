#!/usr/bin/env bash
# Declared dependencies equal the real ones: every module a target's sources import that is a
# target of the same package (a Peerlog module, CSodium, CDNSSD) or a product some target of the
# package names (GRDB, NIOCore, Logging, ...; in a sibling package also the main package's
# products) must be among that target's dependencies in its Package.swift. The manifest is read
# through `swift package dump-package`; SDK modules (Foundation, Glibc, Testing, ...) are not
# checked. Arguments: package directories (default: the main package, Benchmarks and Fuzz).
# Exit status 1 lists every undeclared import.
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
products = set()
for t in targets:
    for dep in t["dependencies"]:
        if "product" in dep:
            products.add(dep["product"][0])
checked = local | products

def default_path(t):
    if t.get("path"):
        return t["path"]
    return ("Tests/" if t["type"] == "test" else "Sources/") + t["name"]

statement = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?"
                       r"import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_]\w*)")
problems = {}  # (target, module) -> the first import's file:line
for t in targets:
    if t["type"] in ("system", "binary", "plugin"):
        continue
    declared = set()
    for dep in t["dependencies"]:
        for kind in ("byName", "target", "product"):
            if kind in dep:
                declared.add(dep[kind][0])
    root = os.path.join(package, default_path(t))
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(directory, name)
            for n, line in enumerate(open(path, encoding="utf-8"), 1):
                m = statement.match(line)
                if m and m.group(1) in checked and m.group(1) != t["name"] and m.group(1) not in declared:
                    problems.setdefault((t["name"], m.group(1)), f"{os.path.normpath(path)}:{n}")
for (target, module), first in sorted(problems.items()):
    print(f"{first}: target {target} imports {module}, which its dependencies in Package.swift do not list")
if problems:
    print(f"check_imports: {len(problems)} undeclared import(s) in {package}/Package.swift", file=sys.stderr)
    sys.exit(1)
print(f"check_imports: every import of {package}/Package.swift's targets is declared")
PY
done
exit $status
