"""The report explorer's files beside report.html (render/html.py), read as the page reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def page_payload(report_dir: Path) -> dict[str, Any]:
    """The explorer's index embedded in ``report.html``."""
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    return json.loads(html.split('<script id="explorer-data" type="application/json">')[1].split("</script>")[0])


def explorer_data(report_dir: Path, name: str) -> Any:
    """The data of ``explorer/NAME.js``: one call ``mtvbenchExplorer.loaded(token, name, data);`` with the page's
    token, whose data has no ``<``, ``>``, ``&`` or raw U+2028/2029 (json_for_script)."""
    token = page_payload(report_dir)["token"]
    text = (report_dir / "explorer" / f"{name}.js").read_text(encoding="utf-8")
    head = f"mtvbenchExplorer.loaded({json.dumps(token)}, {json.dumps(name)}, "
    assert text.startswith(head) and text.endswith(");\n"), text[:200]
    body = text[len(head):-3]
    assert not set(body) & set("<>&\u2028\u2029")
    return json.loads(body)
