"""`kgfed extract --out` never damages a file kgfed did not write (issue 42 item 3): a text or binary file at
OUT was merged into the triples and replaced (or deleted by --fresh); its journals' torn lines are cut only
when every whole line is kgfed's."""
from __future__ import annotations

import pytest

from kgfed.engine.cli.app import main
from kgfed.engine.harness.files import drop_partial_line
from kgfed.sparql.errors import KgfedError

from .conftest import CWQ_NT, CWQ_QUESTIONS, need

FOREIGN = {"notes.md": b"# my notes\nline two without a newline", "blob.nt": bytes(range(256)) * 16,
           "almost.nt": b"<http://x/a> <http://x/b> <http://x/c> .\nbut this line is prose\n"}


@pytest.mark.parametrize("name", sorted(FOREIGN))
@pytest.mark.parametrize("fresh", [False, True])
def test_extract_refuses_an_out_kgfed_did_not_write(tmp_path, capsys, name, fresh):
    out = tmp_path / name
    out.write_bytes(FOREIGN[name])
    argv = ["extract", str(need(CWQ_QUESTIONS)), "--limit", "2", "--hops", "1", "--endpoint", f"file:{need(CWQ_NT)}",
            "--dialect", "freebase", "--out", str(out), "--no-progress", *(["--fresh"] if fresh else [])]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kgfed wrote" in err and "left as it is" in err, err
    assert out.read_bytes() == FOREIGN[name] and sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == [name]


def test_a_journal_with_a_foreign_line_is_not_cut(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"id": "q1"}\nnot json\n{"id": "q2", "tor')
    with pytest.raises(KgfedError, match="line 2 is not one"):
        drop_partial_line(path, lambda line: line.startswith("{"), "a report journal")
    assert path.read_bytes() == b'{"id": "q1"}\nnot json\n{"id": "q2", "tor'
    path.write_bytes(b'{"id": "q1"}\n{"id": "q2", "tor')
    assert drop_partial_line(path, lambda line: line.startswith("{")) == len(b'{"id": "q2", "tor')
    assert path.read_bytes() == b'{"id": "q1"}\n'
