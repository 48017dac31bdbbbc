"""The alert runbook in the console: each kind's section of docs/alerts.md, as plain text.

An alert's page links to its kind's section, so the person on call reads what the alert means
and what to do next to the evidence. The text is the repository's own `docs/alerts.md`, read
when asked for (it is short) and shown escaped, line breaks kept: no Markdown renderer, no
script, nothing fetched from elsewhere. recon runs from its checkout (the Procfile's commands
run there), which is where the file is; an installation without it says so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

from litestar import Controller, Request, get
from litestar.exceptions import NotFoundException
from litestar.params import FromPath
from litestar.response import Template

from app.console.rendering import page
from app.console.session import console_guard
from reconciliation.operator import ALL_ALERT_KINDS

#: The runbook, one `## <kind>` section per alert kind.
RUNBOOK: Final = Path(__file__).resolve().parents[2] / "docs" / "alerts.md"

_HEADING: Final = re.compile(r"^## (\S+)\s*$", re.MULTILINE)


def runbook_sections(text: str) -> dict[str, str]:
    """Each `## name` heading's text up to the next heading, by name."""
    found = list(_HEADING.finditer(text))
    sections = {}
    for index, heading in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(text)
        sections[heading.group(1)] = text[heading.end() : end].strip()
    return sections


def runbook_section(kind: str) -> str:
    """The runbook's section for `kind`; NotFoundException for a kind recon never raises."""
    if kind not in ALL_ALERT_KINDS:
        raise NotFoundException(detail=f"{kind!r} is not an alert kind")
    try:
        text = RUNBOOK.read_text(encoding="utf-8")
    except OSError:
        return f"The runbook (docs/alerts.md in recon's source) is not installed at {RUNBOOK}."
    return runbook_sections(text).get(kind, f"docs/alerts.md has no section for {kind} yet.")


class RunbookPages(Controller):
    path = "/runbook"
    guards = [console_guard]  # noqa: RUF012 - Litestar's declared class attribute

    @get("/{kind:str}", sync_to_thread=False)
    def section(self, request: Request[Any, Any, Any], kind: FromPath[str]) -> Template:
        """What one alert kind means, why it fires, how it clears and what to do."""
        return page(request, "runbook.html", kind=kind, text=runbook_section(kind))
