"""The library logs (retries, 429 pauses at INFO; every request at DEBUG) and prints nothing itself;
`-v`/`-vv` show those lines on stderr, and without them a failing command prints one error line."""
from __future__ import annotations

import logging

from kgfed.engine.cli import main

DEAD = "http://127.0.0.1:9/sparql"  # nothing listens on the discard port: connection refused at once


def test_without_verbose_a_failure_is_one_line(capsys):
    code = main(["relations", "Q42", "--endpoint", DEAD, "--dialect", "wikidata", "--no-cache", "--direction", "out"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("kgfed: error: GET 127.0.0.1:9 connection failed")


def test_verbose_shows_each_retry_and_double_verbose_each_request(capsys):
    try:
        code = main(["relations", "Q42", "--endpoint", DEAD, "--dialect", "wikidata", "--no-cache", "--direction", "out", "-v"])
        lines = capsys.readouterr().err.splitlines()
        retries = [line for line in lines if line.startswith("kgfed: INFO kgfed.http: GET 127.0.0.1:9 connection failed")]
        assert code == 2 and [line.split("; ")[-1].split(" in ")[0] for line in retries] == [f"retry {n} of 4" for n in range(1, 5)]
        assert lines[-1].startswith("kgfed: error:") and not any("DEBUG" in line for line in lines)

        main(["relations", "Q42", "--endpoint", DEAD, "--dialect", "wikidata", "--no-cache", "--direction", "out", "-vv"])
        debug = [line for line in capsys.readouterr().err.splitlines() if line.startswith("kgfed: DEBUG kgfed.http: GET http://127.0.0.1:9/sparql")]
        assert len(debug) == 5  # the first attempt and four retries
    finally:
        logger = logging.getLogger("kgfed")
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
