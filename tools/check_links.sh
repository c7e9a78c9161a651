#!/usr/bin/env bash
# The map stays true: every relative link in a tracked *.md file points at a file that exists (and,
# with a #fragment, at a heading there); every docs/….md path named in Sources, Tests, tools, Fuzz
# and Examples exists; every §N, §N.M (or §N.M.K, a numbered step of §N.M) that code or docs cite
# is a section of docs/PROTOCOL.md. A citation of another spec names it first ("RFC 8949 §4.2.1",
# "Raft §5.4.2", "Noise §11.3", "spec §5.2" in PeerlogNoise), and is not checked.
# No network; python3's standard library only. Exit status 1 lists every broken reference.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os, re, subprocess, sys

files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], capture_output=True,
                       text=True, check=True).stdout.split("\n")
files = [f for f in files if f and os.path.isfile(f)]
problems = []

def slug(heading):
    # GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens.
    s = heading.strip().lower().replace("`", "")
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")

def headings(path):
    out, fenced = [], False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            out.append(line.lstrip("#").strip())
    return out

# Sections of PROTOCOL.md: "## 15. Peer sync" is 15, "### 15.2 Session" is 15.2; a numbered step
# "11. **Membership changes.**" inside 15.2 is 15.2.11.
sections, current, fenced = set(), None, False
for line in open("docs/PROTOCOL.md", encoding="utf-8"):
    if line.startswith("```"):
        fenced = not fenced
        continue
    m = re.match(r"#{2,4} (\d+(?:\.\d+)*)\.? ", line)
    if m and not fenced:
        current = m.group(1)
        sections.add(current)
        continue
    m = re.match(r"(\d+)\. ", line)
    if m and current and not fenced:
        sections.add(f"{current}.{m.group(1)}")

# 1. Relative links in Markdown ([text](target) and [label]: target), outside code.
link = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:\s*(\S+)")
for md in (f for f in files if f.endswith(".md")):
    fenced = False
    for n, line in enumerate(open(md, encoding="utf-8"), 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for m in link.finditer(line):
            target = m.group(1) or m.group(2)
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("<"):
                continue  # https:, mailto:, doc: (DocC)
            path, _, fragment = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            if not os.path.exists(resolved):
                problems.append(f"{md}:{n}: link to missing {target}")
            elif fragment and resolved.endswith(".md"):
                if fragment not in {slug(h) for h in headings(resolved)}:
                    problems.append(f"{md}:{n}: link to missing heading {target}")

# 2. docs/….md paths in code, scripts and their comments.
code_dirs = ("Sources/", "Tests/", "tools/", "Fuzz/", "Examples/")
code = [f for f in files if f.startswith(code_dirs) and not f.endswith(".md")]
docpath = re.compile(r"\bdocs/[A-Za-z0-9_./-]*?\.md\b")
def text_lines(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().split("\n")
    except UnicodeDecodeError:
        return []  # captures, seeds and other binary files
for f in code:
    for n, line in enumerate(text_lines(f), 1):
        for m in docpath.finditer(line):
            if not os.path.exists(m.group(0)):
                problems.append(f"{f}:{n}: names missing {m.group(0)}")

# 3. § citations in code and in the docs.
cite = re.compile(r"§(\d+(?:\.\d+)*)")
other_spec = re.compile(r"(RFC \d+|Raft(?: thesis)?|Noise|spec)(?:'s)?[\s(:]*$")
joiner = re.compile(r"^[\s,]*(?:and|or|to)?[\s,–-]*$")
for f in code + [f for f in files if f.endswith(".md")]:
    for n, line in enumerate(text_lines(f), 1):
        foreign, end = False, None
        for m in cite.finditer(line):
            before = line[:m.start()]
            if end is not None and joiner.match(line[end:m.start()]):
                pass  # "Raft §5.3, §5.4.2": the list shares its first citation's spec
            else:
                foreign = bool(other_spec.search(before))
            end = m.end()
            number = m.group(1).rstrip(".")
            if not foreign and number not in sections:
                problems.append(f"{f}:{n}: cites §{number}, which docs/PROTOCOL.md does not have")

for p in problems:
    print(p)
if problems:
    print(f"check_links: {len(problems)} broken reference(s)", file=sys.stderr)
    sys.exit(1)
print("check_links: every link, docs path and § citation resolves")
PY
