"""`kgfed run --param help` (and `kgfed ask --param help`) list the method's parameters without the run's
other required arguments; every other argument error stays as it was."""
from __future__ import annotations

import pytest

from kgfed.engine.cli import main
from kgfed.engine.cli.method_options import params_listing


def test_run_param_help_needs_no_questions_file_or_out(capsys):
    assert main(["run", "--method", "pog", "--param", "help"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == params_listing("pog").strip() and "max_width" in out and err == ""


def test_param_help_may_come_before_method(capsys):
    assert main(["run", "--param", "help", "--method", "hydra"]) == 0
    assert capsys.readouterr().out.strip() == params_listing("hydra").strip()


def test_param_help_with_only_some_required_arguments(capsys):
    assert main(["run", "questions.jsonl", "--method", "pog", "--param", "help"]) == 0
    assert capsys.readouterr().out.strip() == params_listing("pog").strip()


def test_param_help_without_method_lists_the_default_method(capsys):
    assert main(["run", "--param", "list"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == params_listing("tog").strip() and out != params_listing("pog")


def test_ask_param_help_needs_no_question(capsys):
    assert main(["ask", "--method", "proh", "--param", "help"]) == 0
    assert capsys.readouterr().out.strip() == params_listing("proh").strip()


def test_param_help_of_an_unknown_method_is_one_line(capsys):
    assert main(["run", "--method", "nosuch", "--param", "help"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("kgfed: error: ") and "nosuch" in err


@pytest.mark.parametrize("argv", [["run", "--method", "pog"], ["run", "--method", "pog", "--param", "width=3"],
                                  ["run", "questions.jsonl", "--param", "width=3"]])
def test_other_argument_errors_are_unchanged(argv, capsys):
    """Without `--param help`, or with the error another one: argparse's one line, exit 2."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("kgfed: error: run: the following arguments are required: ")
    assert err.rstrip().endswith("(see kgfed run --help)")
    missing = err.split("required: ")[1].split(" (see")[0]
    assert missing == ("dataset, --out/-o" if argv[1] != "questions.jsonl" else "--out/-o")


def test_param_help_does_not_hide_a_bad_value(capsys):
    """`--limit x` is still refused for what it is, help or not."""
    assert main(["run", "--method", "pog", "--param", "help", "--limit", "x"]) == 2
    err = capsys.readouterr().err
    assert "argument --limit: expected a whole number" in err and capsys.readouterr().out == ""
