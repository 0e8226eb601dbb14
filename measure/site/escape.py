"""Untrusted text (golden rows, model outputs, metadata, names) made inert for Markdown and HTML.

Templates receive only :class:`Md` strings: :func:`md` escapes every
character that Markdown or HTML would interpret into a numeric entity, so a
row holding ``<script>``, ``|``, backticks or ``**markup**`` renders as the
text it is, inside a table cell or anywhere else.
"""

from __future__ import annotations

import html
import re

from markupsafe import Markup

_CONTROL = {chr(c): f"&#92;x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(c) not in "\t\n\r"}
"""Control characters (terminal escape sequences among them) shown as a visible ``\\xNN``: a page may be read
with ``cat`` as well as in a browser."""
_ENTITIES = str.maketrans({c: f"&#{ord(c)};" for c in "&<>\"'`|*_[](){}#\\!~$^"} | {"\r": " ", "\n": " "} | _CONTROL)
_PRE_CONTROL = str.maketrans({c: e.replace("&#92;", "\\") for c, e in _CONTROL.items()})


class Md(Markup):
    """Text that is safe to put into a Markdown page as is (escaped, or written by measure itself).

    A ``Markup`` subclass, so Jinja's autoescape leaves it alone while any plain
    ``str`` is refused by the environment's ``finalize``.
    """

    __slots__ = ()


def md(text: object) -> Md:
    """Escape arbitrary text for a Markdown page; newlines become spaces so a table row stays one row."""
    return Md(str(text).translate(_ENTITIES))


def trusted(text: str) -> Md:
    """Markup measure wrote itself (links, <mark>, admonition syntax): passes unchanged."""
    return Md(text)


def json_for_attribute(text: str) -> Md:
    """JSON carried in an HTML attribute (``data-figure``): every quote and angle bracket becomes an entity.

    Not a <script> element: Material's instant navigation re-creates scripts in
    swapped-in content and would run JSON as code.
    """
    return Md(html.escape(text, quote=True))


def pre(text: str) -> Md:
    """Escape for a raw-HTML <pre> block, line breaks kept.

    Markdown does not look inside a raw HTML block, so HTML escaping is enough
    here, and far fewer entities keep mkdocs' HTML scan of the page fast.
    """
    return Md(html.escape(str(text).translate(_PRE_CONTROL), quote=False))


def slug(text: str) -> Md:
    """An id or anchor: lowercase letters, digits and hyphens only, stable for a given text."""
    return Md(re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x")
