"""Run one benchmark and write its documentation page from what it printed.

    python benchmarks/publish.py index                 # runs benchmarks/index.py, writes
    docs/benchmarks/results/index.md
    python benchmarks/publish.py lookup_soundness --documents 24
    python benchmarks/publish.py score_gpu --log LOG --machine "NVIDIA H200, ..." --wall 270 --tokenizer .gpu/tokenizer

The page holds the script's docstring (what it measures and how), the exact command, the machine
(CPU model, cores, memory), the verifier version and commit, the date, the wall time, and the
script's output verbatim: no number on a benchmark page is copied by hand. ``docs/gen.py`` then
links the page from the benchmark index. A run on another machine (a GPU benchmark on a lent
device) is published from its saved output: ``--log`` names the file, ``--machine`` and ``--wall``
say where and how long it ran, and the remaining arguments are the ones it ran with.
"""

from __future__ import annotations

import ast
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "docs" / "benchmarks" / "results"


def machine() -> str:
    """CPU model, cores and memory, as lscpu and /proc/meminfo give them (what a timing depends on)."""
    model = platform.processor() or platform.machine()
    try:
        lines = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout.splitlines()
        model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("Model name")), model)
        flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("Flags")), [])
        model += " (" + ", ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags) + ")"
    except (OSError, subprocess.SubprocessError):
        pass
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split()[1])
        memory = f", {kib / 2**20:.0f} GiB"
    return f"{model}, {os.cpu_count()} cores{memory}"


def commit() -> str:
    result = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    )
    return (result.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    name, args = argv[0], argv[1:]
    elsewhere: dict[str, str] = {}
    while args[:1] and args[0] in ("--log", "--machine", "--wall"):
        if len(args) < 2:
            print(f"{args[0]} needs a value", file=sys.stderr)
            return 2
        elsewhere[args[0][2:]], args = args[1], args[2:]
    if elsewhere and set(elsewhere) != {"log", "machine", "wall"}:
        print("a run made elsewhere needs --log, --machine and --wall together", file=sys.stderr)
        return 2
    script = ROOT / "benchmarks" / f"{name}.py"
    if not script.is_file() or name == "publish":
        print(
            f"no benchmark {name!r}: "
            f"{', '.join(p.stem for p in sorted(script.parent.glob('*.py')) if p.stem != 'publish')}",
            file=sys.stderr,
        )
        return 2
    if elsewhere:
        stdout, seconds, where = Path(elsewhere["log"]).read_text(), float(elsewhere["wall"]), elsewhere["machine"]
    else:
        started = time.perf_counter()
        run = subprocess.run([sys.executable, str(script), *args], cwd=ROOT, capture_output=True, text=True)
        seconds, stdout, where = time.perf_counter() - started, run.stdout, machine()
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr[-4000:])
        if run.returncode != 0:
            print(f"{name} failed (exit {run.returncode}); no page written", file=sys.stderr)
            return run.returncode
    doc = ast.get_docstring(ast.parse(script.read_text())) or ""
    from verifier import __version__

    page = (
        f"# `benchmarks/{script.name}`\n\n{doc}\n\n## Latest run\n\n"
        f"- command: `python benchmarks/{script.name}{' ' + ' '.join(args) if args else ''}`\n"
        f"- machine: {where}\n- verifier {__version__}, commit {commit()}\n"
        f"- date: {datetime.date.today().isoformat()}; wall time {seconds:.0f} s\n\n"
        f"```\n{stdout.rstrip()}\n```\n"
    )
    PAGES.mkdir(parents=True, exist_ok=True)
    (PAGES / f"{name}.md").write_text(page)
    print(f"wrote docs/benchmarks/results/{name}.md; run python docs/gen.py to link it", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
