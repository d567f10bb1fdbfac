"""What the benchmark scripts share: the commit they measure, and how a table is printed and saved."""
import argparse
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def commit():
    """The commit measured: GR_COMMIT (the GPU machine's copy of the tree has no .git), else git's HEAD."""
    if os.environ.get("GR_COMMIT"):
        return os.environ["GR_COMMIT"]
    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                           timeout=10)
        return r.stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def emit(text, markdown=None):
    """Print a result table, and write it to the file `markdown` too when given."""
    print(text)
    if markdown:
        with open(markdown, "w") as f:
            f.write(text + "\n")


def timing_cell(row, column):
    """A timing table's cell of `row` (a dict): microseconds, marked "(wrong)" where row[column + " ok"] is false,
    "n/a" where the column was not measured."""
    if column not in row:
        return "n/a"
    return f"{row[column]:.1f}" + ("" if row.get(column + " ok", True) else " (wrong)")


def save_table(folder, stem, info, table, rows):
    """Print `table`; with `folder`, write it as <stem>_<gpu>.md and the rows as <stem>_<gpu>.json there."""
    print(table)
    if not folder:
        return
    gpu = info.get("name", "gpu").replace(" ", "_")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{stem}_{gpu}.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(folder, f"{stem}_{gpu}.json"), "w") as f:
        json.dump({"device": info, "rows": rows}, f, indent=1, default=str)


def table_arguments(doc, log2=28, repeat=20, choices=None):
    """The options of a script that measures one size: --log2 (the size), --repeat, --markdown (a file), and with
    `choices` (the rows it can measure) --only NAME,NAME,... (a subset of them, default all)."""
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--log2", type=int, default=log2)
    p.add_argument("--repeat", type=int, default=repeat)
    p.add_argument("--markdown")
    if choices is not None:
        p.add_argument("--only", type=lambda text: text.split(","), default=list(choices),
                       help=f"a comma-separated subset of {', '.join(choices)}")
    args = p.parse_args()
    if choices is not None and set(args.only) - set(choices):
        p.error(f"--only: unknown {', '.join(sorted(set(args.only) - set(choices)))}; choose from {', '.join(choices)}")
    return args
