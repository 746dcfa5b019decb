"""The annotation guidelines shown beside the decision: built-in (``guidelines.md`` of this package) or
a Markdown file of the annotation lead (``mtvbench review serve --guidelines FILE``).

Markdown is rendered with raw HTML switched off (any ``<tag>`` in the file shows as text), images shown
as their alt text (nothing is fetched from elsewhere) and links opened in a new tab without a referrer; the rendered
HTML goes into the pages as it is, so this module is the only escaping of the guidelines.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from mtvbench.errors import ConfigError

#: largest guidelines file
GUIDELINES_MAX = 256 * 1024


def default_guidelines() -> str:
    """The annotation guidelines bundled with mtvbench (``review/guidelines.md``), as Markdown."""
    return resources.files("mtvbench.review").joinpath("guidelines.md").read_text("utf-8")


def load_guidelines(path: Path) -> str:
    """The Markdown of ``path``, or one :class:`ConfigError` naming it."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"--guidelines {path}: cannot read it ({e.strerror or e})") from None
    if len(data) > GUIDELINES_MAX:
        raise ConfigError(f"--guidelines {path}: larger than {GUIDELINES_MAX // 1024} KiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"--guidelines {path}: not UTF-8 text (byte {e.start})") from None


def render_guidelines(markdown: str | None) -> str:
    """HTML of ``markdown`` (None: the built-in guidelines) under the rules of the module docstring."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False})
    tokens = md.parse(default_guidelines() if markdown is None else markdown)
    for tok in tokens:
        for child in tok.children or []:
            if child.type == "link_open":
                child.attrSet("target", "_blank")
                child.attrSet("rel", "noopener noreferrer")
            elif child.type == "image":
                child.type, child.tag, child.attrs, child.children = "text", "", {}, None
    return md.renderer.render(tokens, md.options, {})
