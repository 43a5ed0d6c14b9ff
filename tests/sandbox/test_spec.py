"""Loading ReplaySpec TOML: malformed specs give one-line errors naming file, key and expectation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reprodiag.errors import UserError
from reprodiag.schema import FixSpec, SourceSpec
from sandbox.cases import bundled_case_paths
from sandbox.spec import load_spec, patch_text, source_dir

GOOD = """id = "c1"
paper_value = 0.9
reported_value = 0.7
task_type = "nlp_generation"

[source]
path = "repo"

[run]
command = "python x.py"
metric_regex = 'acc=([0-9.]+)'
seeds = 3

[fix]
patch = "fix.diff"

[limits]
memory_mb = 512
"""


def write(tmp_path: Path, text: str | bytes) -> Path:
    (tmp_path / "repo").mkdir(exist_ok=True)
    (tmp_path / "fix.diff").write_text("--- a/x\n+++ b/x\n")
    p = tmp_path / "case.toml"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def error_of(path: Path) -> str:
    with pytest.raises(UserError) as exc:
        load_spec(path)
    msg = str(exc.value)
    assert "\n" not in msg
    assert str(path) in msg
    return msg


def test_good_spec_loads(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD)
    s = load_spec(p)
    assert (s.id, s.run.seeds, s.limits.memory_mb, s.limits.pids) == ("c1", 3, 512, 256)
    assert source_dir(s, p) == (tmp_path / "repo").resolve()
    assert patch_text(s, p) == "--- a/x\n+++ b/x\n"
    assert load_spec(tmp_path).id == "c1"  # a directory means its case.toml


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda t: t.replace("paper_value = 0.9\n", ""), "key 'paper_value'"),
        (lambda t: t.replace("paper_value = 0.9", 'paper_value = "high"'), "key 'paper_value'"),
        (lambda t: t.replace('task_type = "nlp_generation"', 'task_type = "vision"'), "key 'task_type'"),
        (lambda t: t.replace("seeds = 3", "seeds = 0"), "key 'run.seeds'"),
        (lambda t: t.replace("memory_mb = 512", "memory_mb = -1"), "key 'limits.memory_mb'"),
        (lambda t: t.replace('command = "python x.py"\n', ""), "key 'run.command'"),
        (lambda t: "unknown_key = 1\n" + t, "key 'unknown_key'"),
        (lambda t: t + "\nswap_mb = 1\n", "key 'limits.swap_mb'"),
        (lambda t: t.replace("[run]", "[runn]"), "key 'run'"),
        (lambda t: t.replace("metric_regex = 'acc=([0-9.]+)'", ""), "key 'run'"),
        (lambda t: t.replace("([0-9.]+)", "[0-9.]+"), "capture group"),
        (lambda t: t.replace("([0-9.]+)", "(["), "key 'run.metric_regex'"),
        (lambda t: t.replace('path = "repo"', 'path = "nope"'), "key 'source.path'"),
        (lambda t: t.replace('path = "repo"', ""), "key 'source'"),
        (lambda t: t.replace("paper_value = 0.9", "paper_value = 0.9\ntolerance = 2.0"), "key 'tolerance'"),
        (lambda t: 'expected = "maybe"\n' + t, "key 'expected'"),
    ],
)
def test_malformed_spec_names_the_key(tmp_path: Path, edit, needle: str) -> None:  # noqa: ANN001
    msg = error_of(write(tmp_path, edit(GOOD)))
    assert needle in msg


def test_invalid_toml_syntax(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, GOOD.replace('id = "c1"', 'id = "c1')))
    assert "invalid TOML" in msg


def test_binary_and_odd_unicode(tmp_path: Path) -> None:
    assert "UTF-8" in error_of(write(tmp_path, b"\xff\xfe\x00garbage"))
    s = load_spec(write(tmp_path, GOOD.replace('id = "c1"', 'id = "c\u00e9-\u202e-\U0001f600"')))
    assert s.id.startswith("c\u00e9")


def test_missing_and_huge_files(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read case file"):
        load_spec(tmp_path / "absent.toml")
    assert "limit" in error_of(write(tmp_path, GOOD + "#" * 2_000_000))


def test_unreadable_patch_file(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD.replace('patch = "fix.diff"', 'patch = "missing.diff"'))
    with pytest.raises(UserError, match="fix.patch"):
        patch_text(load_spec(p), p)


def test_inline_patch_text(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD.replace('patch = "fix.diff"', 'patch = """--- a/x\n+++ b/x\n@@ -1 +1 @@\n"""'))
    assert patch_text(load_spec(p), p).startswith("--- a/x\n")


def test_bundled_cases_are_valid_and_cover_every_error_type() -> None:
    paths = bundled_case_paths()
    specs = [load_spec(p) for p in paths]
    assert len(specs) >= 7
    types = {s.error_type for s in specs if s.expected == "confirmed"}
    assert types >= {"hyperparameter", "data", "evaluation_protocol", "framework_version", "seed_hardware"}
    negatives = [s for s in specs if s.expected in ("fix_not_confirmed", "symptom_not_reproduced")]
    assert len(negatives) >= 2
    assert all(s.expected for s in specs)
    assert len({s.id for s in specs}) == len(specs)


def case_in(tmp_path: Path, text: str) -> Path:
    """A spec in ``tmp_path/cases/c1`` next to its repo and fix.diff; ``tmp_path/outside`` holds other files."""
    d = tmp_path / "cases" / "c1"
    d.mkdir(parents=True)
    (tmp_path / "outside" / "repo").mkdir(parents=True)
    (tmp_path / "outside" / "fix.diff").write_text("--- a/x\n+++ b/x\n")
    return write(d, text)


@pytest.mark.parametrize(("old", "new", "key"), [
    ('path = "repo"', 'path = "../../etc"', "source.path"),
    ('path = "repo"', 'path = "/etc"', "source.path"),
    ('path = "repo"', 'path = "../../outside/repo"', "source.path"),
    ('path = "repo"', 'path = "link"', "source.path"),
    ('patch = "fix.diff"', 'patch = "../../etc/passwd"', "fix.patch"),
    ('patch = "fix.diff"', 'patch = "/etc/passwd"', "fix.patch"),
    ('patch = "fix.diff"', 'patch = "../../outside/fix.diff"', "fix.patch"),
    ('patch = "fix.diff"', 'patch = "difflink"', "fix.patch"),
])
def test_source_and_patch_paths_must_stay_in_the_case_directory(tmp_path: Path, old: str, new: str,
                                                                key: str) -> None:
    p = case_in(tmp_path, GOOD.replace(old, new))
    os.symlink(tmp_path / "outside" / "repo", p.parent / "link")
    os.symlink("/etc/passwd", p.parent / "difflink")
    msg = error_of(p)
    assert f"key '{key}'" in msg and "outside the case directory" in msg


def test_paths_that_stay_inside_are_fine(tmp_path: Path) -> None:
    p = case_in(tmp_path, GOOD.replace('path = "repo"', 'path = "./repo/../repo"')
                .replace('patch = "fix.diff"', f'patch = "{tmp_path}/cases/c1/fix.diff"'))
    s = load_spec(p)
    assert source_dir(s, p) == p.parent.resolve() / "repo"
    assert patch_text(s, p) == "--- a/x\n+++ b/x\n"


def test_patch_path_checks_also_hold_when_the_spec_was_not_loaded_by_load_spec(tmp_path: Path) -> None:
    p = case_in(tmp_path, GOOD)
    spec = load_spec(p).model_copy(update={"fix": FixSpec(patch="../../outside/fix.diff"),
                                           "source": SourceSpec(path="/etc")})
    with pytest.raises(UserError, match="outside the case directory"):
        patch_text(spec, p)
    with pytest.raises(UserError, match="outside the case directory"):
        source_dir(spec, p)


def test_a_fifo_as_patch_does_not_hang(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD.replace('patch = "fix.diff"', 'patch = "pipe.diff"'))
    os.mkfifo(tmp_path / "pipe.diff")
    with pytest.raises(UserError, match="not a regular file"):
        patch_text(load_spec(p), p)


@pytest.mark.parametrize("url", ["ext::sh -c touch% /tmp/pwned", "fd::17", "ssh://git@example.org/r.git",
                                 "git@example.org:r.git", "-uhelp", "https://example.org/r x.git", "relative/repo",
                                 "https://ex\u0000ample.org/r.git"])
def test_git_sources_other_than_plain_urls_are_refused(tmp_path: Path, url: str) -> None:
    toml_url = url.replace(chr(0), "\\u0000")  # TOML's escape for a NUL
    text = GOOD.replace('path = "repo"', f'git = "{toml_url}"')
    msg = error_of(write(tmp_path, text))
    assert "key 'source.git'" in msg


@pytest.mark.parametrize("url", ["https://github.com/o/r.git", "http://127.0.0.1:9/r", "git://h/r",
                                 "file:///srv/r", "/srv/repos/r"])
def test_plain_git_urls_are_accepted(tmp_path: Path, url: str) -> None:
    assert load_spec(write(tmp_path, GOOD.replace('path = "repo"', f'git = "{url}"'))).source.git == url


def test_cli_rejects_an_escaping_spec_with_exit_2(cli, tmp_path: Path) -> None:  # noqa: ANN001
    p = case_in(tmp_path, GOOD.replace('path = "repo"', 'path = "../../../../../../etc"'))
    proc = cli("replay", "--case", str(p), "--backend", "bwrap", "--output", str(tmp_path / "v.json"))
    assert proc.returncode == 2, proc.stderr
    assert "outside the case directory" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "v.json").exists()


@pytest.mark.parametrize("ref", ["--orphan=x", "-b", "", "v1 --", "a\nb"])
def test_git_refs_that_look_like_options_are_refused(tmp_path: Path, ref: str) -> None:
    text = GOOD.replace('path = "repo"', f'git = "https://example.org/r.git"\nref = {ref!r}'.replace("'", '"'))
    text = text.replace('"a\nb"', '"a\\nb"')
    assert "key 'source.ref'" in error_of(write(tmp_path, text))
