"""Execute a notebook in place and store its outputs, without Jupyter (the GPU machine has none).

    python benchmarks/run_notebook.py examples/explore.ipynb [--out executed.ipynb]

Runs the code cells in order in one namespace, like a kernel would: stdout becomes a stream output, the
value of a cell's last expression an execute_result (text/plain, plus text/html from _repr_html_ and
image/png for a matplotlib Figure).  Uses nbclient instead when it is installed.  Exits 1 on an error,
after recording it in the notebook.
"""
import argparse
import ast
import base64
import contextlib
import io
import json
import sys
import traceback


def display_data(value):
    data = {"text/plain": repr(value)}
    html = getattr(value, "_repr_html_", None)
    if callable(html):
        data["text/html"] = html()
    if type(value).__name__ == "Figure" and hasattr(value, "savefig"):
        buf = io.BytesIO()
        value.savefig(buf, format="png", dpi=100)
        data["image/png"] = base64.b64encode(buf.getvalue()).decode()
    return data


def run_cell(source, namespace):
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    out, outputs, value = io.StringIO(), [], None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(compile(tree, "<cell>", "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
        error = None
    except Exception as e:  # recorded in the notebook, like Jupyter does
        error = e
    if out.getvalue():
        outputs.append({"output_type": "stream", "name": "stdout", "text": out.getvalue()})
    if error is not None:
        outputs.append({"output_type": "error", "ename": type(error).__name__, "evalue": str(error),
                        "traceback": traceback.format_exception(error)})
    elif value is not None:
        outputs.append({"output_type": "execute_result", "data": display_data(value), "metadata": {}})
    return outputs, error


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("notebook")
    p.add_argument("--out")
    args = p.parse_args()
    try:
        import nbclient
        import nbformat
    except ImportError:
        nbclient = None
    if nbclient is not None:
        nb = nbformat.read(args.notebook, as_version=4)
        nbclient.NotebookClient(nb, timeout=1200).execute()
        nbformat.write(nb, args.out or args.notebook)
        return 0
    with open(args.notebook, encoding="utf-8") as f:
        nb = json.load(f)
    namespace = {"__name__": "__main__"}
    count, failed = 0, False
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        count += 1
        outputs, error = run_cell("".join(cell["source"]), namespace)
        for o in outputs:
            if o["output_type"] == "execute_result":
                o["execution_count"] = count
        cell["outputs"], cell["execution_count"] = outputs, count
        if error is not None:
            print(f"cell {count} failed: {error!r}", file=sys.stderr)
            failed = True
            break
    with open(args.out or args.notebook, "w", encoding="utf-8") as f:
        json.dump(nb, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"executed {count} cells of {args.notebook}" + (" (stopped at an error)" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
