"""Error bodies the gateway shapes: the database away is a 503 to try again, not a 500."""

from __future__ import annotations

import httpx
import psycopg
from fastapi import FastAPI
from psycopg_pool import PoolTimeout

from mnemo_gateway import errors


async def test_the_database_away_answers_503_with_a_retry_after():
    app = FastAPI()
    errors.install(app)

    @app.get("/lost")
    async def lost() -> None:
        raise psycopg.OperationalError("terminating connection due to administrator command")

    @app.get("/busy")
    async def busy() -> None:
        raise PoolTimeout("couldn't get a connection after 10.00 sec")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        for path, cause in (("/lost", "OperationalError"), ("/busy", "PoolTimeout")):
            r = await client.get(path)
            assert r.status_code == 503, r.text
            assert r.headers["Retry-After"] == "1" and cause in r.json()["detail"]
