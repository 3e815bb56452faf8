"""A report's sections as markdown (a short summary file linking to a details file) and
as one self-contained HTML page (the summary first, every other section folded)."""

from __future__ import annotations

import base64
import html
import re
import textwrap
from dataclasses import dataclass, field

import pandas as pd

from reports.section import Block, Section

# A table cell longer than this is cut where it is shown: in HTML it unfolds to the whole
# text, in markdown the whole text is a numbered note below the table.
CELL_CHARS = 160
# A cell longer than this may break anywhere, so that no table is wider than the page; a
# shorter one (a figure, a name) stays on one line.
WORD_CHARS = 24
# Prose in the markdown files is wrapped at this width (markdown joins the lines again).
TEXT_WIDTH = 100
DETAILS_FILE = "report-details.md"

CSS = """
body { font-family: system-ui, sans-serif; margin: 1em auto; max-width: 82em; padding: 0 1em;
       color: #222; }
h1, h2, h3 { font-weight: 600; } h1 { font-size: 1.6em; margin: .3em 0; }
h2 { font-size: 1.3em; margin: .8em 0 .3em; border-bottom: 1px solid #ccc; padding-bottom: .1em; }
p { margin: .4em 0; }
table { border-collapse: collapse; font-size: .85em; margin: .6em 0; }
th, td { border: 1px solid #ddd; padding: .2em .5em; text-align: left; vertical-align: top;
         overflow-wrap: break-word; }
td { white-space: nowrap; } td.text { white-space: normal; overflow-wrap: anywhere; }
th { background: #f3f3f3; } tr:nth-child(even) td { background: #fafafa; }
img { max-width: 100%; height: auto; } code { background: #f3f3f3; padding: 0 .2em; }
p { overflow-wrap: anywhere; } .meta { color: #555; }
details.part { border-bottom: 1px solid #ddd; padding: .2em 0; }
details.part > summary { font-size: 1.2em; font-weight: 600; cursor: pointer; padding: .3em 0; }
details.cell > summary { cursor: pointer; }
"""


@dataclass
class Page:
    """What a report shows: its title, lines about the runs under it, the summary sections
    (the first screen) and the details sections."""

    title: str
    header: list[str] = field(default_factory=list)
    summary: list[Section] = field(default_factory=list)
    details: list[Section] = field(default_factory=list)


def short(text: str, limit: int = CELL_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def anchors(sections: list[Section]) -> list[str]:
    """Each section's anchor as GitHub makes it from a heading (lower case, punctuation
    dropped, spaces as '-', a repeated one numbered), the same in the HTML page."""
    taken: dict[str, int] = {}
    out = []
    for s in sections:
        slug = re.sub(r"[^\w\- ]", "", s.title.lower()).replace(" ", "-")
        n = taken.get(slug, 0)
        taken[slug] = n + 1
        out.append(slug if n == 0 else f"{slug}-{n}")
    return out


def _wrap(text: str) -> str:
    """A paragraph wrapped at TEXT_WIDTH; text with line breaks of its own is kept."""
    if "\n" in text:
        return text
    return textwrap.fill(text, TEXT_WIDTH, break_long_words=False, break_on_hyphens=False)


def _markdown_table(frame: pd.DataFrame) -> str:
    """A pipe table whose long cells are cut, each with the number of a note below the
    table that holds its whole text (a `|` or line break in a cell escaped)."""
    notes: dict[str, int] = {}

    def cell(value: object) -> object:
        if not isinstance(value, str):
            return value
        if len(value) > CELL_CHARS:
            number = notes.setdefault(value, len(notes) + 1)
            value = f"{short(value, CELL_CHARS - 6)} [{number}]"
        return value.replace("|", "\\|").replace("\n", "<br>")

    lines = [frame.map(cell).to_markdown(index=False)]
    for text, number in notes.items():
        lines.append(textwrap.fill(" ".join(text.split()), TEXT_WIDTH,
                                   initial_indent=f"[{number}] ", subsequent_indent="    ",
                                   break_long_words=False, break_on_hyphens=False))
    return "\n\n".join(lines)


def _markdown_blocks(blocks: list[Block]) -> list[str]:
    """Markdown of a section's blocks; images are files beside the markdown."""
    out = []
    for b in blocks:
        if isinstance(b, pd.DataFrame):
            out += [_markdown_table(b), ""]
        elif isinstance(b, tuple):
            out += [f"![{b[0]}]({b[0]})", ""]
        else:
            out += [_wrap(b), ""]
    return out


def markdown_summary(page: Page) -> str:
    """report.md: the header and the summary sections, then a link to each details
    section in DETAILS_FILE."""
    out = [f"# {page.title}", "", *(_wrap(line) for line in page.header), ""]
    for s in page.summary:
        out += [f"## {s.title}", "", *_markdown_blocks(s.blocks)]
    out += ["## Details", "", f"Every table and plot of the report, in [{DETAILS_FILE}]"
            f"({DETAILS_FILE}) (and in report.html, folded):", ""]
    out += [f"- [{s.title}]({DETAILS_FILE}#{a})" for s, a in zip(
        page.details, anchors(page.details), strict=True)]
    return "\n".join(out) + "\n"


def markdown_details(page: Page) -> str:
    """DETAILS_FILE: every details section whole, a link back to the summary first."""
    out = [f"# {page.title}: details", "", "The summary is in [report.md](report.md).", ""]
    for s in page.details:
        out += [f"## {s.title}", "", *_markdown_blocks(s.blocks)]
    return "\n".join(out)


def _inline_code(text: str) -> str:
    """Escape text for HTML and render `code` spans."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _html_cell(value: object) -> str:
    """A table cell's HTML: empty for a missing value, a long text folded after its start."""
    if value is None or (not isinstance(value, (list, dict, tuple)) and pd.isna(value)):
        return ""
    text = format(value, "g") if isinstance(value, float) else str(value)
    if len(text) <= CELL_CHARS:
        return _inline_code(text)
    return (f'<details class="cell"><summary>{html.escape(short(text))}</summary>'
            f"{html.escape(text)}</details>")


def _html_td(value: object) -> str:
    """A table cell, marked as text that may break anywhere where it is long."""
    cell = _html_cell(value)
    return f'<td class="text">{cell}</td>' if len(cell) > WORD_CHARS else f"<td>{cell}</td>"


def _html_table(frame: pd.DataFrame) -> str:
    """A table with a header row; the cells as `_html_cell` writes them."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "\n".join(
        "<tr>" + "".join(_html_td(v) for v in row) + "</tr>"
        for row in frame.itertuples(index=False, name=None)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{rows}\n</tbody></table>"


def _html_blocks(blocks: list[Block]) -> list[str]:
    """HTML of a section's blocks; images embedded as base64 PNG."""
    out = []
    for b in blocks:
        if isinstance(b, pd.DataFrame):
            out.append(_html_table(b))
        elif isinstance(b, tuple):
            data = base64.b64encode(b[1]).decode("ascii")
            out.append(f'<img alt="{html.escape(b[0])}" src="data:image/png;base64,{data}">')
        else:
            out.append(f"<p>{_inline_code(b)}</p>")
    return out


def html_page(page: Page) -> str:
    """One self-contained page: inline CSS, the summary sections open at the top, each
    details section folded in a `<details>` of its own."""
    body = [f"<h1>{html.escape(page.title)}</h1>"]
    if page.header:
        body.append('<p class="meta">' + "<br>".join(map(_inline_code, page.header)) + "</p>")
    body.append('<section id="summary">')
    for s in page.summary:
        body += [f"<h2>{_inline_code(s.title)}</h2>", *_html_blocks(s.blocks)]
    body.append("</section>")
    if page.details:
        body.append("<h2>Details</h2>")
    for s, anchor in zip(page.details, anchors(page.details), strict=True):
        body += [f'<details class="part" id="{anchor}"><summary>{_inline_code(s.title)}'
                 "</summary>", *_html_blocks(s.blocks), "</details>"]
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(page.title)}'
        f"</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
