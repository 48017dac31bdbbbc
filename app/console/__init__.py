"""The operator console: server-rendered pages under /console for finance and the engineer on call.

`console_router(settings)` is the whole console as one Litestar Router (pages, forms, static
assets); `TEMPLATE_CONFIG` is its Jinja set-up, which Litestar takes at the app level.
`app.main.create_app` mounts both. Pages read through `reconciliation` query functions and
change things only through `reconciliation.operator.actions`, each change with its audit row.
Nothing here runs on the receiver's path: the receiver is dispatched before Litestar.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from litestar import Request, Response, Router
from litestar.exceptions import (
    NotAuthorizedException,
    NotFoundException,
    PermissionDeniedException,
    ValidationException,
)
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

from app.console.alert_pages import AlertPages
from app.console.auth_pages import SignInController, SignOutController
from app.console.delivery_pages import DeliveryPages
from app.console.exception_pages import ExceptionPages
from app.console.formatting import register_filters
from app.console.pages import ReadPages
from app.console.rendering import refusal_page
from app.console.runbook_pages import RunbookPages
from foundation import Settings

#: Where the templates and the console's own CSS and script live (served by recon, no CDN).
HERE: Final = Path(__file__).resolve().parent
TEMPLATES: Final = HERE / "templates"
STATIC: Final = HERE / "static"

#: The console's Jinja environment, with its filters (app.console.formatting).
TEMPLATE_CONFIG: Final = TemplateConfig(
    directory=TEMPLATES,
    engine=JinjaTemplateEngine,
    engine_callback=lambda engine: register_filters(engine.engine),
)


def _to_sign_in(request: Request[Any, Any, Any], _: Exception) -> Response[Any]:
    """No session: go sign in, and come back to the page asked for (GET only)."""
    wanted = request.url.path if request.method == "GET" else "/console"
    return Redirect(path=f"/console/sign-in?next={quote(wanted)}", status_code=303)


def _plain_refusal(_: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """A refusal (bad filter, unknown id, stale form) as a short readable page."""
    status = getattr(exc, "status_code", 400)
    return refusal_page(status, getattr(exc, "detail", "") or str(exc))


def console_router(settings: Settings) -> Router:
    """The console, mounted at /console; cookies are Secure when RECON_PUBLIC_URL is https."""
    return Router(
        path="/console",
        route_handlers=[
            SignInController,
            SignOutController,
            ReadPages,
            AlertPages,
            ExceptionPages,
            DeliveryPages,
            RunbookPages,
            create_static_files_router(path="/static", directories=[STATIC], name="console-static"),
        ],
        opt={"secure_cookies": settings.web.public_url.lower().startswith("https://")},
        exception_handlers={
            NotAuthorizedException: _to_sign_in,
            PermissionDeniedException: _plain_refusal,
            NotFoundException: _plain_refusal,
            ValidationException: _plain_refusal,
        },
        include_in_schema=False,
    )
