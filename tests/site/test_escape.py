"""Escaping judged by what a reader sees: text rendered by Python-Markdown with the site's extensions.

``md`` is right when the visible text of the rendered page equals the input, character for
character, in a paragraph, a table cell and a heading, and no element the input asks for appears.
"""

from __future__ import annotations

from html.parser import HTMLParser

import markdown
import pytest

from measure.site.escape import Md, json_for_attribute, md, pre, slug, trusted

# The site's markdown_extensions (mkdocs.yml): what the pages are rendered with.
EXTENSIONS = ["admonition", "attr_list", "tables", "toc"]

HOSTILE = [
    "__x__",
    "_x_",
    "~~x~~",
    "{: .big #id }",
    "x {: .big }",
    "&amp;",
    "&#42;",
    "**bold** *em*",
    "`code`",
    "<b>tag</b>",
    "<script>alert(1)</script>",
    "[link](http://x)",
    "![img](x.png)",
    "a | b | c",
    "# not a heading",
    "!!! note",
    "\\*escaped\\*",
    "$x^2$",
    "(x) [y] {z}",
    "'quoted' \"double\"",
    "__init__.py",
    "1. not a list",
    "- not a list",
    "> not a quote",
    "x  ",
    "слово ~ объём",
]


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def _render(text: str) -> _Visible:
    parser = _Visible()
    parser.feed(markdown.markdown(text, extensions=EXTENSIONS))
    parser.close()
    return parser


@pytest.mark.parametrize("text", HOSTILE)
def test_a_paragraph_shows_the_text_it_is(text):
    seen = _render(f"before {md(text)} after")
    assert "".join(seen.text) == f"before {text} after"
    assert seen.tags == ["p"]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_table_cell_shows_the_text_it_is(text):
    seen = _render(f"| a | b |\n|---|---|\n| {md(text)} | end |\n")
    cells = [t for t in seen.text if t.strip()]
    assert cells == ["a", "b", text.strip(), "end"]
    assert seen.tags.count("td") == 2 and set(seen.tags) <= {"table", "thead", "tbody", "tr", "th", "td"}


@pytest.mark.parametrize("text", ["__x__", "{: #evil }", "a *b* `c`", "x &amp; y"])
def test_a_heading_shows_the_text_it_is(text):
    seen = _render(f"## {md(text)}")
    assert "".join(seen.text).strip() == text
    assert seen.tags == ["h2"]


def test_every_markdown_and_html_character_becomes_its_numeric_entity():
    for ch in "&<>\"'`|*_[](){}#\\!~$^":
        assert md(ch) == f"&#{ord(ch)};", ch
    assert md("a\nb\rc") == "a b c"  # a table row stays one row
    assert md("plain words 123 -.,:;/=+?%@") == "plain words 123 -.,:;/=+?%@"
    assert md(42) == "42"
    assert isinstance(md("x"), Md)


def test_trusted_pre_json_and_slug():
    assert trusted("<mark>x</mark>") == "<mark>x</mark>" and isinstance(trusted("x"), Md)
    assert pre("a < b & 'c'\nd") == "a &lt; b &amp; 'c'\nd" and isinstance(pre("x"), Md)
    assert json_for_attribute('{"a": "<\'>"}') == "{&quot;a&quot;: &quot;&lt;&#x27;&gt;&quot;}"
    assert isinstance(json_for_attribute("x"), Md)
    assert slug("Wall-clock 2026/01/02 Été") == "wall-clock-2026-01-02-t"
    assert slug("--A  b--") == "a-b"
    assert slug("***") == "x" and isinstance(slug("a"), Md)
