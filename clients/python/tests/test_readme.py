"""The Python snippets of README.md's "Use from your agent" section, run against the started ELMA as a reader would
run them: the fenced blocks marked ```python tested, in order, in one interpreter, with ELMA_URL, ELMA_TOKEN and
COMPLIANCE_TOKEN set as the section's shell block sets them. Each ``# => `` line is output the block must print (in
order; ``…`` stands for anything)."""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

from elma_server import REPO

MARKER = "python tested"
BLOCK_SEPARATOR = "\x1e--- readme block ---"

# Runs each block in one namespace and separates their output, so a failure names the block it happened in.
RUNNER = f"""
import json, sys
namespace = {{"__name__": "__main__"}}
for number, source in enumerate(json.load(sys.stdin), 1):
    print({BLOCK_SEPARATOR!r}, flush=True)
    exec(compile(source, f"README.md, Python block {{number}}", "exec"), namespace)
"""


def python_section(readme: str) -> str:
    start = readme.index("\n## Use from your agent\n")
    section = readme[start:]
    section = section[: section.index("\n## ", 1)]
    python = section[section.index("\n### Python\n") :]
    following = python.find("\n### ", 1)
    return python if following < 0 else python[:following]


def marked_blocks(section: str) -> List[str]:
    return [m.group(1) for m in re.finditer(r"^```" + re.escape(MARKER) + r"\n(.*?)^```$", section, re.S | re.M)]


def expected_lines(block: str) -> List[str]:
    return [line.split("# => ", 1)[1] for line in block.splitlines() if line.startswith("# => ")]


def matches(pattern: str, line: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("…")), line) is not None


def test_the_readme_python_snippets_run_and_print_what_they_say(elma_server, tokens: Dict[str, str]) -> None:
    blocks = marked_blocks(python_section((REPO / "README.md").read_text(encoding="utf-8")))
    assert len(blocks) >= 3, "the Python subsection has lost its tested snippets"

    env = {k: v for k, v in os.environ.items() if not k.startswith("ELMA_")}
    env.update(
        {"ELMA_URL": elma_server.url, "ELMA_TOKEN": tokens["agent"], "COMPLIANCE_TOKEN": tokens["compliance"], "PYTHONIOENCODING": "utf-8"}
    )
    with tempfile.TemporaryDirectory() as cwd:
        run = subprocess.run(
            [sys.executable, "-c", RUNNER], input=json.dumps(blocks), env=env, cwd=cwd, capture_output=True, text=True, timeout=600
        )
        assert run.returncode == 0, run.stderr
        assert json.loads(Path(cwd, "cert.json").read_text())["certificate"]["type"] == "elma.erasure-certificate"

    outputs = run.stdout.split(BLOCK_SEPARATOR + "\n")[1:]
    assert len(outputs) == len(blocks)
    for number, (block, output) in enumerate(zip(blocks, outputs), 1):
        lines = output.splitlines()
        for pattern in expected_lines(block):
            found = next((i for i, line in enumerate(lines) if matches(pattern, line)), None)
            assert found is not None, f"README.md, Python block {number}: no line `{pattern}` in\n{output}"
            lines = lines[found + 1 :]
