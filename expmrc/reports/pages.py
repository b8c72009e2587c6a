"""What the HTML pages share: the Jinja2 environment, inline assets, matplotlib figures as inline SVG,
and writing a page atomically with one clear line when the output cannot be written.

Every string from the data reaches a page through the template engine (autoescaped) or as JSON in a
`<script type="application/json">` block (`tojson`, which escapes `<`, `>`, `&` and `'`); the pages'
own scripts put data into the document with `textContent`, never as markup.
"""

from __future__ import annotations

import io
import math
import os
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from expmrc.data.io import write_text_atomic
from expmrc.errors import ExpmrcError

_ENV: jinja2.Environment | None = None


def environment() -> jinja2.Environment:
    """The templates under expmrc/reports/templates, autoescaped, strict about undefined names."""
    global _ENV
    if _ENV is None:
        env = jinja2.Environment(loader=jinja2.PackageLoader("expmrc.reports", "templates"),
                                 autoescape=True, undefined=jinja2.StrictUndefined,
                                 trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
        # Sorted keys keep pages diffable; non-ASCII stays as text (Chinese passages would triple in size as
        # \\u escapes); a NaN would be invalid JSON for the page, so it raises instead of slipping through.
        env.policies["json.dumps_kwargs"] = {"sort_keys": True, "ensure_ascii": False, "allow_nan": False}
        env.filters["figure"] = format_figure
        _ENV = env
    return _ENV


def asset(name: str) -> Markup:
    """A style sheet or script from the templates folder, to inline in a page as it is."""
    return Markup(resources.files("expmrc.reports").joinpath("templates", name).read_text(encoding="utf-8"))


def render(template: str, **context: Any) -> str:
    """Render one of the templates with `context`."""
    return environment().get_template(template).render(**context)


def format_figure(value: Any, digits: int = 3) -> str:
    """A figure as the reports print it: fixed decimals for floats, `n/a` for None or non-finite."""
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else "n/a"
    return "n/a" if value is None else str(value)


def json_value(value: Any) -> Any:
    """`value` made safe for the page's JSON: non-finite floats become None, unknown types their str()."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return str(value)


def svg(fig: Any, salt: str) -> Markup:
    """A matplotlib figure as an inline `<svg>` element: text kept as text, no date, ids stable per `salt`.

    The figure is closed. Figures hold only labels the code chose (never text from the data), so the
    SVG matplotlib writes can go into the page as markup.
    """
    import matplotlib
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    try:
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
            fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    finally:
        plt.close(fig)
    text = buffer.getvalue()
    return Markup(text[text.index("<svg"):].strip())


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def check_output(path: str) -> None:
    """Refuse, before any work is done, an output path that names a folder or lies under a file."""
    if os.path.isdir(path):
        raise ExpmrcError(f"{path}: is a directory; give the page a file name (e.g. {Path(path) / 'report.html'})")
    parent = Path(path).parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ExpmrcError(f"{path}: cannot write the page: {parent} is not a directory")


def write_page(path: str, html: str) -> int:
    """Write a page atomically; returns its size in bytes. Unwritable paths end in one line, not a traceback."""
    check_output(path)
    try:
        write_text_atomic(path, html)
    except OSError as exc:
        raise ExpmrcError(f"{path}: cannot write the page: {exc.strerror or exc}") from None
    return len(html.encode("utf-8", "replace"))


def human_size(size: int) -> str:
    """Bytes as `812 KB` or `1.4 MB` (powers of 1000)."""
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1000:.0f} KB"
    return f"{size / 1_000_000:.1f} MB"
