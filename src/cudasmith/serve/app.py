"""The HTTP API of `cudasmith serve`, on FastAPI: requests are checked against the pydantic models of
models.py (422 with the field and what is wrong), answers are JSON, and /docs is the OpenAPI page.

    POST /v1/verdicts          one candidate or {"candidates": [...]}: their ids, once stored (202)
    GET  /v1/verdicts/{id}     its state, and once done its verdict and reward; ?wait=S waits up to S s
    GET  /v1/health            up, with the device, judge, judging options, executor and lanes
    GET  /v1/metrics           queue depth, in flight, verdicts a minute, GPU busy

Every error is `{"error": "one line"}` with its status: 401 no or wrong token, 403 not on this server,
404 unknown task or submission, 413 too large, 422 not valid, 429 queue full (with Retry-After).
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from cudasmith import __version__
from cudasmith.serve.access import authorized
from cudasmith.serve.models import Accepted, Batch, Health, Metrics, Served, Submission
from cudasmith.serve.protocol import MAX_WAIT_S
from cudasmith.serve.service import JudgeService
from cudasmith.serve.sessions import Refused

# A request body beyond this is refused before it is read (413): split the batch.
MAX_BODY_BYTES = 64 * 1024 * 1024
DESCRIPTION = (
    "The cudasmith judge as a service: candidates in, verdicts (and their rewards) out, each judged in a "
    "fresh sandboxed worker with every defence on, K at once per GPU with timing alone on the device."
)


def _one_line(errors: list[Any]) -> str:
    """The first validation error as `field: what is wrong` (all of them are in `detail`)."""
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        return f"the body is not JSON: {first.get('ctx', {}).get('error', first.get('msg'))}"
    # The location less "body" and the body's shape (a tag, not a field a user wrote).
    where = ".".join(str(part) for part in first.get("loc", ())[1:] if part not in ("candidate", "batch"))
    message = first.get("msg", "not valid")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {message}{more}" if where else f"{message}{more}"


def make_app(service: JudgeService, token: str | None) -> FastAPI:
    """The API over `service`; with a `token`, every /v1 route needs `Authorization: Bearer TOKEN`."""
    app = FastAPI(title="cudasmith", version=__version__, description=DESCRIPTION)

    async def bearer(authorization: str | None = Header(None, include_in_schema=False)) -> None:
        if token is not None and not authorized(authorization, token):
            raise Refused(401, "a valid bearer token is needed: Authorization: Bearer TOKEN")

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> JSONResponse:
        headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s is not None else {}
        if exc.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        return JSONResponse({"error": _one_line(errors), "detail": jsonable_encoder(errors)}, status_code=422)

    router = APIRouter(prefix="/v1", dependencies=[Depends(bearer)])

    @router.post("/verdicts", status_code=202, response_model=Accepted)
    def submit(body: Submission, request: Request) -> Accepted:
        """Queue one candidate or a batch; answers at once with their ids (stored before this answer)."""
        if int(request.headers.get("content-length") or 0) > MAX_BODY_BYTES:
            raise Refused(413, f"a request over {MAX_BODY_BYTES} bytes is refused: split the batch")
        candidates = body.candidates if isinstance(body, Batch) else [body]
        return Accepted(ids=service.submit(candidates))

    @router.get("/verdicts/{id}", response_model=Served)
    async def verdict(id: int, wait: float = Query(0.0, ge=0, le=MAX_WAIT_S)) -> Served:
        """A submission's state, and once done its verdict and reward; waits up to `wait` seconds for it."""
        done = service.done(id)
        if done is not None and wait > 0:
            await asyncio.wait([asyncio.wrap_future(done)], timeout=wait)
        return await run_in_threadpool(service.state, id)

    @router.get("/health", response_model=Health)
    def health() -> Health:
        """The server is up: its version, device, judge and judging options, executor and lanes."""
        return Health(version=__version__, **service.health())

    @router.get("/metrics", response_model=Metrics)
    def metrics() -> Metrics:
        """The queue depth, candidates in flight, verdicts a minute and how busy the GPUs are."""
        return service.metrics()

    app.include_router(router)
    return app
